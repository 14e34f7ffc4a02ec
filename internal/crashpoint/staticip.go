package crashpoint

// Crash points of static addressing (pools with spec.network). Not in All: the chaos campaign's pools use
// DHCP; the static-IP specs (controllers/staticip_crash_test.go) stop the operator at these.
const (
	LeaseClaimed       = "lease-claimed"        // pool: IPAddressClaim created, its NMStateConfig not yet
	LeaseConfigCreated = "lease-config-created" // pool: NMStateConfig created, no VM holds the lease yet
	LeaseAssigned      = "lease-assigned"       // VsphereAgent: lease labelled with its holder, VM not yet created
)

// StaticIP lists the static addressing crash points.
var StaticIP = []string{LeaseClaimed, LeaseConfigCreated, LeaseAssigned}
