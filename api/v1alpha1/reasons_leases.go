package v1alpha1

// StaticIPsReady and VMCreated reasons of static addressing, and its Events.
const (
	// ReasonLeasesReady: the pool's address leases are ready, held or pending as status.leases counts them.
	ReasonLeasesReady = "LeasesReady"
	// ReasonLeasesPending: address claims wait for the IPAM provider, or their batch for its NMStateConfigs.
	ReasonLeasesPending = "LeasesPending"
	// ReasonIPPoolExhausted: the IPAM pool has no free address; no VM is created.
	ReasonIPPoolExhausted = "IPPoolExhausted"
	// ReasonInfraEnvSelectsNoNMStateConfig: the InfraEnv has no nmStateConfigLabelSelector.matchLabels.
	ReasonInfraEnvSelectsNoNMStateConfig = "InfraEnvSelectsNoNMStateConfig"
	// ReasonIPAMUnavailable: the hub serves no ipam.cluster.x-k8s.io IPAddressClaim.
	ReasonIPAMUnavailable = "IPAMUnavailable"
	// ReasonWaitingForLease: no static address lease is ready for the VM yet.
	ReasonWaitingForLease = "WaitingForLease"
	// ReasonWaitingForImageWithLease: the cached image predates the VM's NMStateConfig; creation waits.
	ReasonWaitingForImageWithLease = "WaitingForImageWithLease"
	// ReasonInvalidIPAddress: the IPAM provider handed out an address whose prefix or gateway cannot work
	// (or an IPv6 one); no NMStateConfig and no VM is made with it.
	ReasonInvalidIPAddress = "InvalidIPAddress"
	// ReasonLeaseNotInImage: a VM waits for a lease whose NMStateConfig no discovery image carries (the
	// InfraEnv cannot select it, or no image carried it in time); its VM is not created.
	ReasonLeaseNotInImage = "LeaseNotInImage"
	// ReasonLeasesClaimed: address claims were created in a batch (Normal Event).
	ReasonLeasesClaimed = "LeasesClaimed"
	// ReasonLeasesPrepared: the claimed leases' NMStateConfigs were written (Normal Event).
	ReasonLeasesPrepared = "LeasesPrepared"
	// ReasonLeasesReleased: released leases were removed in a batch (Normal Event).
	ReasonLeasesReleased = "LeasesReleased"
	// ReasonLeasesTrimmed: spare leases beyond spareLeases were given back to the IPAM pool once demand settled (Normal Event).
	ReasonLeasesTrimmed = "LeasesTrimmed"
	// ReasonLeaseHeld: a VM holds a static address lease (Normal Event).
	ReasonLeaseHeld = "LeaseHeld"
	// ReasonLeaseClaimFailed: the API server refused an IPAddressClaim (Warning Event).
	ReasonLeaseClaimFailed = "LeaseClaimFailed"
	// ReasonLeasesFollowSelector: the InfraEnv's selector changed; unused leases' NMStateConfigs were rewritten (Normal Event).
	ReasonLeasesFollowSelector = "LeasesFollowSelector"
)
