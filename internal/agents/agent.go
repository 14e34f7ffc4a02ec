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
	Deleting   bool
	Obj        *unstructured.Unstructured
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

// AgentMachineRef is the AgentMachine the provider reserved this Agent for ("" when free).
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

// ReservedBy reports whether the Agent's reservation names this AgentMachine. The provider labels
// the Agent with the AgentMachine's UID (getAgentMachineRefLabel in cluster-api-provider-agent); the
// name is accepted too, for hand-made reservations.
func (a Agent) ReservedBy(am AgentMachine) bool {
	ref, ns := a.AgentMachineRef(), ""
	if a.Obj != nil {
		ns = a.Obj.GetAnnotations()[AnnotationAgentMachineRefNamespace]
	}
	if ref == "" || (ns != "" && ns != am.Namespace) {
		return false
	}
	return ref == string(am.UID) || ref == am.Name
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
// Connected=True, Validated=True and a usable hostname (labels are checked by the caller).
func (a Agent) IsSuitable() bool {
	return !a.Deleting && a.Approved && !a.IsBound() &&
		IsTrue(a.Conditions, "Connected") && IsTrue(a.Conditions, "Validated") &&
		a.Hostname != "" && a.Hostname != "localhost"
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

// IsHostOf reports whether this Agent was registered by the VM with that MAC and BIOS UUID: the MAC
// must match, and a reported serial number must match the BIOS UUID (two VMs can share a MAC after a
// misconfiguration; the hardware serial tells them apart).
func (a Agent) IsHostOf(mac, biosUUID string) bool {
	if !a.HasMAC(mac) {
		return false
	}
	want, got := NormalizeUUID(biosUUID), NormalizeUUID(a.Serial)
	return want == "" || got == "" || want == got
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
