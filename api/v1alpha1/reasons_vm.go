package v1alpha1

// Condition and Event reasons of a VsphereAgent: its VM's creation, health, Agent and destruction.
const (
	// ReasonAvailable: Ready=True of a VsphereAgent whose Agent is free for an AgentMachine (phase Available).
	ReasonAvailable = "Available"
	// ReasonBound: Ready=True of a VsphereAgent whose Agent is bound to a cluster (phase Bound).
	ReasonBound = "Bound"
	// ReasonVMCreated: the VM is created and powered on (condition and batched Event).
	ReasonVMCreated = "VMCreated"
	// ReasonVMAdopted: a VM of an earlier attempt was found and adopted instead of creating another (Event).
	ReasonVMAdopted = "VMAdopted"
	// ReasonNotCreatedByPool: the VsphereAgent was not created by its pool; it is never acted on.
	ReasonNotCreatedByPool = "NotCreatedByPool"
	// ReasonVMRunning: vCenter shows the VM powered on where it was made (VMHealthy=True).
	ReasonVMRunning = "VMRunning"
	// ReasonVMRenamed: the VM was renamed in vCenter.
	ReasonVMRenamed = "VMRenamed"
	// ReasonVMMoved: the VM was moved to another folder in vCenter.
	ReasonVMMoved = "VMMoved"
	// ReasonVMPoweredOff: the VM is powered off.
	ReasonVMPoweredOff = "VMPoweredOff"
	// ReasonVMPoweredOn: the VM is powered on again.
	ReasonVMPoweredOn = "VMPoweredOn"
	// ReasonBootOrderSet: a check found the VM not booting its disk first (the reconfigure its creation
	// started failed, or someone changed the order) before its installation finished, and put the disk
	// first again (Normal Event).
	ReasonBootOrderSet = "BootOrderSet"
	// ReasonBootOrderNotDiskFirst: the VM does not boot its disk first and the operator could not, or
	// (an installed worker) does not, change that: an installed worker would boot the discovery ISO at its
	// next boot (VMHealthy=False and Warning Event).
	ReasonBootOrderNotDiskFirst = "BootOrderNotDiskFirst"
	// ReasonVMNotFound: the VM is gone from vCenter (confirmed by a second look-up).
	ReasonVMNotFound = "VMNotFound"
	// ReasonVMNotFoundUnconfirmed: a look-up found no VM; a second one confirms it or finds it again.
	ReasonVMNotFoundUnconfirmed = "VMNotFoundUnconfirmed"
	// ReasonVMIdentityChanged: the VM found by instance UUID is not the one created (a copy or a re-made VM).
	ReasonVMIdentityChanged = "VMIdentityChanged"
	// ReasonAwaitingRegistration: the VM boots the discovery ISO; its Agent has not registered yet.
	ReasonAwaitingRegistration = "AwaitingRegistration"
	// ReasonAgentRegistered: the VM's Agent registered.
	ReasonAgentRegistered = "AgentRegistered"
	// ReasonRegistrationTimeout: the VM registered no Agent in time; it is destroyed and replaced.
	ReasonRegistrationTimeout = "RegistrationTimeout"
	// ReasonHostIdentityUnproven: an Agent reports the VM's MAC or serial but not both; it is never used.
	ReasonHostIdentityUnproven = "HostIdentityUnproven"
	// ReasonAgentPrepared: the VM's Agent is labelled and approved for the pool.
	ReasonAgentPrepared = "AgentPrepared"
	// ReasonAgentBound: the VM's Agent is bound to a cluster.
	ReasonAgentBound = "AgentBound"
	// ReasonAgentUnbound: the VM's Agent is free again after unbinding.
	ReasonAgentUnbound = "AgentUnbound"
	// ReasonAgentMissing: the VM's Agent no longer exists.
	ReasonAgentMissing = "AgentMissing"
	// ReasonUnbindingPendingUserAction: the VM's Agent was unbound after installation and awaits a reboot
	// into discovery; the VM is released (condition and Warning Event).
	ReasonUnbindingPendingUserAction = "UnbindingPendingUserAction"
	// ReasonInstallingPendingUserAction: the VM's bound Agent booted the discovery image again instead of
	// its installed disk (assisted-service's installing-pending-user-action): the worker does not come up
	// until its CD-ROM is emptied or its boot order fixed and it is rebooted (condition and Warning Event).
	ReasonInstallingPendingUserAction = "InstallingPendingUserAction"
	// ReasonDiscoveryBootReset: the operator ejected the ISO of a worker that booted discovery again, put
	// its disk first and reset it (spec.iso.recoverDiscoveryBoot; Normal Event).
	ReasonDiscoveryBootReset = "DiscoveryBootReset"
	// ReasonDiscoveryBootResetFailed: the reset of such a worker failed; it is retried (Warning Event).
	ReasonDiscoveryBootResetFailed = "DiscoveryBootResetFailed"
	// ReasonDiscoveryBootRecovered: after the reset the worker's Agent left installing-pending-user-action
	// (Normal Event).
	ReasonDiscoveryBootRecovered = "DiscoveryBootRecovered"
	// ReasonDiscoveryBootNotRecovered: the worker's Agent still waits at installing-pending-user-action
	// registrationTimeout after the reset; nothing more is tried (Ready reason and Warning Event).
	ReasonDiscoveryBootNotRecovered = "DiscoveryBootNotRecovered"
	// ReasonOwnershipMismatch: a VM with the VsphereAgent's instance UUID lacks its ownership marker.
	ReasonOwnershipMismatch = "OwnershipMismatch"
	// ReasonWaitingForMachineDeletion: the VM backs a Machine being deleted; it is destroyed once that is gone.
	ReasonWaitingForMachineDeletion = "WaitingForMachineDeletion"
	// ReasonDeleting: the VsphereAgent is being deleted; its VM is cleaned up (status.vm.reason).
	ReasonDeleting = "Deleting"
	// ReasonCleanedUp: the deleted VsphereAgent's VM and Agent were removed (Normal Event).
	ReasonCleanedUp = "CleanedUp"
	// ReasonVMRetained: the VM and its Agent are kept (cleanupPolicy Retain, or the pool is gone) (Normal Event).
	ReasonVMRetained = "VMRetained"
	// ReasonVMRetainedInUse: the VM still backs a Machine, so it is kept running (Normal Event).
	ReasonVMRetainedInUse = "VMRetainedInUse"
	// ReasonVMNotOwned: the VM is not this VsphereAgent's; nothing was destroyed (Normal Event).
	ReasonVMNotOwned = "VMNotOwned"
	// ReasonVMDestroyed: the VM was destroyed (Normal Event).
	ReasonVMDestroyed = "VMDestroyed"
	// ReasonVMDestroyFailed: destroying the VM failed (Warning Event).
	ReasonVMDestroyFailed = "VMDestroyFailed"
	// ReasonDestroyRefused: the VM lacks the VsphereAgent's ownership marker, so it is not destroyed (Warning Event).
	ReasonDestroyRefused = "DestroyRefused"
	// ReasonAgentDeleted: the VM's Agent was deleted with it (Normal Event).
	ReasonAgentDeleted = "AgentDeleted"
)
