package crashpoint

// Crash points of static addressing (pools with spec.network). Not in All (the DHCP points every
// scenario can reach): the chaos campaign adds them with its static-IP scenarios (Campaign), and the
// static-IP specs (controllers/staticip_test.go) stop the operator at the StaticIP ones on scale-up.
const (
	LeaseClaimed       = "lease-claimed"        // pool: IPAddressClaim created, its NMStateConfig not yet
	LeaseConfigCreated = "lease-config-created" // pool: NMStateConfig created, no VM holds the lease yet
	LeaseAssigned      = "lease-assigned"       // VsphereAgent: lease labelled with its holder, VM not yet created
	LeaseReleased      = "lease-released"       // VsphereAgent: its destroyed VM's lease marked released, finalizer not yet removed
	LeaseConfigRemoved = "lease-config-removed" // pool: a released lease's NMStateConfig deleted, its claim not yet
)

// StaticIP lists the static addressing crash points a scale-up reaches.
var StaticIP = []string{LeaseClaimed, LeaseConfigCreated, LeaseAssigned}

// StaticIPRelease lists the static addressing crash points a scale-down reaches.
var StaticIPRelease = []string{LeaseReleased, LeaseConfigRemoved}

// Campaign lists every crash point the chaos campaign must kill at: All plus the static addressing ones.
var Campaign = append(append(append([]string(nil), All...), StaticIP...), StaticIPRelease...)
