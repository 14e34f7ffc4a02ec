package metrics

import "github.com/prometheus/client_golang/prometheus"

// CRDSchemaOutdated is 1 while the served CRD (label crd) would prune fields this controller relies on
// (the ISO ejection recovery record): ejection does not start until the CRDs are updated.
var CRDSchemaOutdated = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "agent_forge_crd_schema_outdated",
	Help: "1 while the served CRD is older than the controller and would prune the ISO ejection recovery record (ejection is refused).",
}, []string{"crd"})

// OtherManagerActive is 1 while another agent-forge manager holds a live Lease (upstream's install or an
// older install of this operator) and this manager therefore takes no action (internal/exclusion).
var OtherManagerActive = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "agent_forge_other_manager_active",
	Help: "1 while another agent-forge manager holds a live leader-election Lease in another namespace and this manager stands down.",
})

// ManagerLeasesUnreadable is 1 while the leader-election Leases of other agent-forge managers could not be
// read for longer than the grace period (internal/exclusion): this manager then takes no action, since
// another manager can no longer be ruled out.
var ManagerLeasesUnreadable = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "agent_forge_manager_leases_unreadable",
	Help: "1 while the leader-election Leases of other agent-forge managers could not be read for longer than the grace period and this manager stands down (fails closed).",
})
