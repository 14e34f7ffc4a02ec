package agents

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Agent is a view of an assisted-service Agent.
type Agent struct {
	Name, Namespace       string
	UID                   types.UID
	ResourceVersion       string
	Labels                map[string]string
	Approved              bool
	Hostname, Role        string
	ClusterDeploymentName string
	// NodeLabels is spec.nodeLabels: labels assisted-service puts on the host's node once it is Ready.
	NodeLabels map[string]string
	MACs       []string // lower-case
	Serial     string   // systemVendor.serialNumber
	Conditions []Condition
	// State is status.debugInfo.state: assisted-service's host state (e.g. known-unbound, reclaiming,
	// unbinding-pending-user-action).
	State string
	// StateInfo is status.debugInfo.stateInfo: assisted-service's explanation of the state.
	StateInfo string
	Deleting  bool
	Obj       *unstructured.Unstructured
}

// AgentFrom builds the view.
func AgentFrom(u *unstructured.Unstructured) Agent {
	a := Agent{
		Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		Labels: u.GetLabels(), Conditions: Conditions(u), Deleting: u.GetDeletionTimestamp() != nil, Obj: u,
	}
	a.Approved, _, _ = unstructured.NestedBool(u.Object, "spec", "approved")
	a.Hostname, _, _ = unstructured.NestedString(u.Object, "spec", "hostname")
	a.Role, _, _ = unstructured.NestedString(u.Object, "spec", "role")
	a.ClusterDeploymentName, _, _ = unstructured.NestedString(u.Object, "spec", "clusterDeploymentName", "name")
	a.NodeLabels, _, _ = unstructured.NestedStringMap(u.Object, "spec", "nodeLabels")
	a.Serial, _, _ = unstructured.NestedString(u.Object, "status", "inventory", "systemVendor", "serialNumber")
	a.State, _, _ = unstructured.NestedString(u.Object, "status", "debugInfo", "state")
	a.StateInfo, _, _ = unstructured.NestedString(u.Object, "status", "debugInfo", "stateInfo")
	ifaces, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "interfaces")
	for _, i := range ifaces {
		if m, ok := i.(map[string]any); ok {
			mac, _ := m["macAddress"].(string)
			if mac = NormalizeMAC(mac); mac != "" { // a blank reported MAC is no MAC
				a.MACs = append(a.MACs, mac)
			}
		}
	}
	return a
}

// AgentMachineRef is the agentMachineRef label the provider wrote on a reserved Agent ("" when free):
// the AgentMachine's name (current providers) or UID (older ones). Compare it with ReservedBy only.
func (a Agent) AgentMachineRef() string { return a.Labels[LabelAgentMachineRef] }

// AnyReservedBy reports whether one of the Agents is reserved by the AgentMachine.
func AnyReservedBy(list []Agent, am AgentMachine) bool {
	for _, a := range list {
		if a.ReservedBy(am) {
			return true
		}
	}
	return false
}

// ReservedBy reports whether the Agent's reservation names this AgentMachine. The Agent CAPI provider
// labels a reserved Agent agentMachineRef=<value> and annotates it agentMachineRefNamespace=<the
// AgentMachine's namespace> (annotation since cluster-api-provider-agent 43fd6e0). The value has had two
// shapes, and both are read:
//
//   - the AgentMachine's NAME: current providers (since 2de8dad, 2024-09, OCPBUGS-32592). A name is
//     unique only within a namespace, so it matches only when the namespace annotation is present and
//     equals the AgentMachine's namespace. A name without the annotation is ambiguous (any same-named
//     AgentMachine in any control plane namespace could own it) and matches nothing: counting it for
//     the wrong AgentMachine would end another cluster's demand or record another cluster's Machine.
//   - the AgentMachine's UID: older providers (4bf2401, 2022-01, until 2de8dad). A UID is unique in the
//     cluster, so it matches without the annotation (providers before 43fd6e0 wrote none); when the
//     annotation is present it must still equal the AgentMachine's namespace.
func (a Agent) ReservedBy(am AgentMachine) bool {
	ref := a.AgentMachineRef()
	if ref == "" {
		return false
	}
	ns, annotated := "", false
	if a.Obj != nil {
		ns, annotated = a.Obj.GetAnnotations()[AnnotationAgentMachineRefNamespace]
	}
	if annotated && ns != am.Namespace {
		return false
	}
	if am.UID != "" && ref == string(am.UID) {
		return true
	}
	return annotated && am.Name != "" && ref == am.Name
}

// IsBound reports whether the Agent is reserved or bound to an AgentMachine.
func (a Agent) IsBound() bool {
	return a.AgentMachineRef() != "" || IsTrue(a.Conditions, "Bound") || a.ClusterDeploymentName != ""
}

// IsInstalled reports Installed=True (installed or added to an existing cluster).
func (a Agent) IsInstalled() bool { return IsTrue(a.Conditions, "Installed") }

// MatchesLabels reports whether every label in want is on the Agent.
func (a Agent) MatchesLabels(want map[string]string) bool {
	if len(want) == 0 {
		return false
	}
	for k, v := range want {
		if got, ok := a.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// IsSuitable reports what the Agent CAPI provider requires before binding: approved, free,
// Connected=True, Validated=True and a usable hostname (labels are checked by the caller). An Agent on
// its way out of a cluster (IsUnbinding) is never suitable, whatever its other conditions say:
// assisted-service reports Validated=False/Unbinding then, and this does not depend on it.
func (a Agent) IsSuitable() bool {
	return !a.Deleting && a.Approved && !a.IsBound() && !a.IsUnbinding() &&
		IsTrue(a.Conditions, "Connected") && IsTrue(a.Conditions, "Validated") &&
		a.Hostname != "" && a.Hostname != "localhost"
}

// assisted-service host states (status.debugInfo.state) and Bound reasons of an Agent leaving a cluster
// (internal/host/statemachine.go and the Agent controller's bound() in openshift/assisted-service).
const (
	// StateUnbinding: a host that had not started installing leaves its cluster; it becomes *-unbound.
	StateUnbinding = "unbinding"
	// StateUnbindingPendingUserAction: an installed host (or one in error) was unbound and is not
	// reclaimed: it still runs the installed OS and must be rebooted into the discovery image.
	StateUnbindingPendingUserAction = "unbinding-pending-user-action"
	// StateReclaiming and StateReclaimingRebooting: an installed host is being rebooted into discovery
	// by assisted-service itself (image service on, no BareMetalHost); it registers unbound again, or ends
	// in unbinding-pending-user-action when reclaiming fails or times out.
	StateReclaiming          = "reclaiming"
	StateReclaimingRebooting = "reclaiming-rebooting"
	// StateInstallingPendingUserAction: an installed (or installing) host booted the discovery image
	// again instead of its disk ("Wrong boot order detection"): it waits for someone to fix the boot
	// order and reboot it; Bound stays True and Installed is False again.
	StateInstallingPendingUserAction = "installing-pending-user-action"

	// Reasons of assisted-service's Agent conditions, read (foreign values, never written by this operator;
	// the VsphereAgent's own reason at unbinding-pending-user-action is afv1.ReasonUnbindingPendingUserAction).

	// BoundReasonUnbinding is the Bound (and Validated) condition's reason while unbinding.
	BoundReasonUnbinding = "Unbinding"
	// BoundReasonUnbindingPendingUserAction is the Bound condition's reason at unbinding-pending-user-action.
	BoundReasonUnbindingPendingUserAction = "UnbindingPendingUserAction"
)

// AwaitsRebootIntoDiscovery reports an Agent at unbinding-pending-user-action: the provider unbound it
// after installation and assisted-service did not reclaim the host, so it waits for someone to reboot it
// into the discovery image (Bound=False/UnbindingPendingUserAction, Validated=False/Unbinding). Read
// from the Bound condition or from status.debugInfo.state, whichever is present.
func (a Agent) AwaitsRebootIntoDiscovery() bool {
	if a.State == StateUnbindingPendingUserAction {
		return true
	}
	c, ok := FindCondition(a.Conditions, "Bound")
	return ok && c.Status == "False" && c.Reason == BoundReasonUnbindingPendingUserAction
}

// BootedDiscoveryAgain reports an Agent at installing-pending-user-action: its host booted the discovery
// image where assisted-service expected it to boot the installation disk (StateInfo says which disk).
func (a Agent) BootedDiscoveryAgain() bool { return a.State == StateInstallingPendingUserAction }

// IsUnbinding reports an Agent between an unbind and its next discovery: unbinding, reclaiming,
// reclaiming-rebooting or unbinding-pending-user-action (by state), or Bound=False with reason Unbinding
// or UnbindingPendingUserAction. Such an Agent is not free capacity: it is not suitable (IsSuitable),
// and a VM whose Agent is here has served a Machine.
func (a Agent) IsUnbinding() bool {
	switch a.State {
	case StateUnbinding, StateUnbindingPendingUserAction, StateReclaiming, StateReclaimingRebooting:
		return true
	}
	c, ok := FindCondition(a.Conditions, "Bound")
	return ok && c.Status == "False" && (c.Reason == BoundReasonUnbinding || c.Reason == BoundReasonUnbindingPendingUserAction)
}

// HasMAC reports whether the Agent reported the MAC.
func (a Agent) HasMAC(mac string) bool {
	mac = NormalizeMAC(mac)
	if mac == "" {
		return false
	}
	for _, m := range a.MACs {
		if m == mac {
			return true
		}
	}
	return false
}

// HostProof is how far an Agent's inventory proves that a VM's host registered it. The MAC alone is no
// proof: anyone who can read the discovery ISO can boot it on a machine with a pool VM's MAC. The VMware
// serial number (systemVendor.serialNumber, derived from the VM's BIOS UUID) is the second key.
type HostProof int

const (
	// NotHost means the Agent reports neither the VM's MAC nor its serial.
	NotHost HostProof = iota
	// ProvenHost means the Agent reports the VM's MAC and the VMware serial of the VM's BIOS UUID.
	ProvenHost
	// MACNoSerial is the VM's MAC, but no VMware serial (no inventory serial yet, or a non-VMware one).
	MACNoSerial
	// MACOtherSerial is the VM's MAC with another machine's serial (or the VM's BIOS UUID is unknown).
	MACOtherSerial
	// SerialNoMAC is the VM's serial, but the VM's MAC is not among its interfaces.
	SerialNoMAC
	// ForeignNIC is the VM's MAC and serial, but also an interface whose MAC is none of the VM's NICs
	// (only for VMs with several NICs, whose MACs are all known).
	ForeignNIC
)

// ProofOfHost classifies the Agent against the VM with that MAC and BIOS UUID.
func (a Agent) ProofOfHost(mac, biosUUID string) HostProof {
	want, got := NormalizeUUID(biosUUID), NormalizeUUID(a.Serial)
	switch {
	case !a.HasMAC(mac) && want != "" && got == want:
		return SerialNoMAC
	case !a.HasMAC(mac):
		return NotHost
	case got == "":
		return MACNoSerial
	case want == "" || got != want:
		return MACOtherSerial
	}
	return ProvenHost
}

// ProofOfHostWith is ProofOfHost for a VM whose NICs have the MACs vmMACs (empty: only mac is known,
// as for a VM with one NIC): a proven host must also report no interface that is not one of them.
func (a Agent) ProofOfHostWith(mac string, vmMACs []string, biosUUID string) HostProof {
	p := a.ProofOfHost(mac, biosUUID)
	if p != ProvenHost || len(vmMACs) == 0 {
		return p
	}
	if len(a.ForeignMACs(vmMACs)) > 0 {
		return ForeignNIC
	}
	return p
}

// ForeignMACs are the MACs the Agent reports that are none of vmMACs.
func (a Agent) ForeignMACs(vmMACs []string) []string {
	own := make(map[string]bool, len(vmMACs))
	for _, m := range vmMACs {
		own[NormalizeMAC(m)] = true
	}
	var out []string
	for _, m := range a.MACs {
		if !own[m] {
			out = append(out, m)
		}
	}
	return out
}

// IsHostOf reports whether this Agent was registered by the VM with that MAC and BIOS UUID: both the MAC
// and the serial number must be the VM's (ProofOfHost).
func (a Agent) IsHostOf(mac, biosUUID string) bool { return a.ProofOfHost(mac, biosUUID) == ProvenHost }

// MayBeHostOf reports whether the Agent could be the VM's: it reports the VM's MAC and no other
// machine's serial. Only for decisions that keep something (a VM that may back a worker) or that verify
// the serial themselves; never a reason to label, approve or delete an Agent.
func (a Agent) MayBeHostOf(mac, biosUUID string) bool {
	p := a.ProofOfHost(mac, biosUUID)
	return p == ProvenHost || p == MACNoSerial || (p == MACOtherSerial && NormalizeUUID(biosUUID) == "")
}

// NormalizeMAC lower-cases a MAC address and uses colons.
func NormalizeMAC(mac string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(mac)), "-", ":")
}

// NormalizeUUID reduces a BIOS UUID or a VMware serial ("VMware-42 1e ...-...") to 32 lower-case hex digits.
func NormalizeUUID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "vmware-")
	var b strings.Builder
	for _, r := range s {
		if (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') {
			b.WriteRune(r)
		}
	}
	if b.Len() != 32 {
		return ""
	}
	return b.String()
}

// SerialFromBIOSUUID renders the serial number VMware guests report for a BIOS UUID.
func SerialFromBIOSUUID(uuid string) string {
	h := NormalizeUUID(uuid)
	if h == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("VMware-")
	for i := 0; i < 16; i++ {
		if i > 0 {
			if i == 8 {
				b.WriteByte('-')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(h[2*i : 2*i+2])
	}
	return b.String()
}
