package vsphereagent

import (
	"context"
	"fmt"
	"sort"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/shared"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// adoptionEvidence reads (never writes) the VM named vmName and the Agent upstream recorded, and lists
// every piece of evidence that disagrees (empty: the VM is upstream's for this VsphereAgent and pool).
// On mismatch no candidate is returned.
func (r *Reconciler) adoptionEvidence(ctx context.Context, vs vsphere.Client, s *vmScope, dc, vmName string) (*vsphere.AdoptionCandidate, *agents.Agent, []string, error) {
	va, pool := s.va, s.pool
	var bad []string
	if vmName == "" {
		return nil, nil, []string{"name: the VsphereAgent records no VM name (no vm-name annotation, no status.vm.name)"}, nil
	}
	if am := va.Labels[afv1.LabelUpstreamAgentMachine]; am != "" && am != vmName {
		bad = append(bad, fmt.Sprintf("name: VM name %s is not the AgentMachine name %s", vmName, am))
	}
	if n := va.Status.VM.Name; n != "" && n != vmName {
		bad = append(bad, fmt.Sprintf("name: status.vm.name %s differs from the vm-name annotation %s", n, vmName))
	}
	cands, err := vs.AdoptionCandidates(ctx, dc, vmName)
	if err != nil {
		return nil, nil, nil, err
	}
	switch len(cands) {
	case 0:
		return nil, nil, append(bad, fmt.Sprintf("name: no VM named %s in datacenter %s", vmName, dc)), nil
	case 1:
	default:
		// Never the first one found: either could be upstream's, so both are reported and neither adopted.
		return nil, nil, append(bad, fmt.Sprintf("name: %d VMs are named %s (%s); which one is upstream's is not provable, none adopted",
			len(cands), vmName, describeCandidates(cands))), nil
	}
	cand := &cands[0]
	want := va.Status.VM
	if want.BIOSUUID == "" || !strings.EqualFold(want.BIOSUUID, cand.BIOSUUID) {
		bad = append(bad, fmt.Sprintf("biosUUID: the VM has %s, the VsphereAgent recorded %q", cand.BIOSUUID, want.BIOSUUID))
	}
	if want.MACAddress == "" || agents.NormalizeMAC(want.MACAddress) != agents.NormalizeMAC(cand.MACAddress) {
		bad = append(bad, fmt.Sprintf("macAddress: the VM has %s, the VsphereAgent recorded %q", cand.MACAddress, want.MACAddress))
	}
	if folder, _ := poolspec.DomainOf(pool, va.Spec.FailureDomain); strings.Trim(folder.Folder, "/") != cand.Folder {
		bad = append(bad, fmt.Sprintf("folder: the VM is in %q, the pool's folder is %q", cand.Folder, strings.Trim(folder.Folder, "/")))
	}
	prefix := iso.PathPrefix(pool)
	for _, cd := range cand.CDROMs {
		if cd.ISOPath != "" && !iso.IsCachedISOPath(cd.ISOPath, pool.Spec.VSphere.ISODatastore, prefix) {
			bad = append(bad, fmt.Sprintf("cdrom: the drive holds %s, not an ISO of this pool ([%s] %s/<sha256>.iso)", cd.ISOPath, pool.Spec.VSphere.ISODatastore, prefix))
		}
	}
	bad = append(bad, markerMismatches(va, cand)...)
	agent, agentBad, err := r.adoptionAgent(ctx, va, cand)
	if err != nil {
		return nil, nil, nil, err
	}
	if bad = append(bad, agentBad...); len(bad) > 0 {
		return nil, nil, bad, nil
	}
	return cand, agent, nil, nil
}

// markerMismatches checks the ownership markers: upstream 1.1.0+ Notes must name this VsphereAgent's
// UID (required when status.vm.ownerUID was recorded; 1.0.x VMs carry none), and an extraConfig marker
// of ours may only name this VsphereAgent (an adoption whose status write was lost).
func markerMismatches(va *afv1.VsphereAgent, cand *vsphere.AdoptionCandidate) []string {
	var bad []string
	uids := notesMarkerUIDs(cand.Notes)
	for _, uid := range uids {
		if uid != string(va.UID) {
			bad = append(bad, fmt.Sprintf("notes: the VM's upstream marker names VsphereAgent UID %s, not this VsphereAgent's %s", uid, va.UID))
		}
	}
	if len(uids) == 0 && va.Status.VM.OwnerUID != "" {
		bad = append(bad, fmt.Sprintf("notes: status.vm.ownerUID %s is recorded but the VM carries no upstream marker", va.Status.VM.OwnerUID))
	}
	if o := va.Status.VM.OwnerUID; o != "" && o != string(va.UID) {
		bad = append(bad, fmt.Sprintf("notes: status.vm.ownerUID %s is not this VsphereAgent's UID %s", o, va.UID))
	}
	if o := cand.Ownership.OwnerUID; o != "" && o != string(va.UID) {
		bad = append(bad, fmt.Sprintf("marker: the VM carries this operator's marker for another owner (%s)", o))
	}
	return bad
}

// adoptionAgent reads live the Agent upstream recorded (status.vm.agentRef), else the one registered
// with the VM's MAC; its inventory must report the VM's MAC and BIOS UUID. No Agent is fine while none
// is recorded (a VM still booting).
func (r *Reconciler) adoptionAgent(ctx context.Context, va *afv1.VsphereAgent, cand *vsphere.AdoptionCandidate) (*agents.Agent, []string, error) {
	var agent *agents.Agent
	var err error
	recorded := ""
	if ref := va.Status.VM.UpstreamAgentRef; ref != nil && ref.Name != "" {
		recorded = ref.Name
		agent, err = shared.FreshAgent(ctx, r.APIReader, va.Namespace, ref.Name)
	} else {
		agent, err = shared.FreshAgentByMAC(ctx, r.APIReader, va.Namespace, agents.NormalizeMAC(cand.MACAddress), "")
	}
	switch {
	case err != nil:
		return nil, nil, err
	case agent == nil && recorded != "":
		return nil, []string{fmt.Sprintf("agent: the recorded Agent %s does not exist", recorded)}, nil
	case agent == nil:
		return nil, nil, nil
	}
	var bad []string
	if !agent.HasMAC(agents.NormalizeMAC(cand.MACAddress)) {
		bad = append(bad, fmt.Sprintf("agent: Agent %s's inventory does not list the VM's MAC %s", agent.Name, cand.MACAddress))
	}
	if agents.NormalizeUUID(agent.Serial) != agents.NormalizeUUID(cand.BIOSUUID) {
		bad = append(bad, fmt.Sprintf("agent: Agent %s's serial number %q is not the VM's BIOS UUID %s", agent.Name, agent.Serial, cand.BIOSUUID))
	}
	return agent, bad, nil
}

// notesMarkerUIDs are the VsphereAgent UIDs that upstream markers in the VM's Notes name, one per line
// carrying the marker (upstream writes exactly one; text a user added around it is not evidence).
func notesMarkerUIDs(notes string) []string {
	var uids []string
	for _, line := range strings.Split(notes, "\n") {
		if _, uid, ok := strings.Cut(strings.TrimSpace(line), afv1.UpstreamNotesMarkerPrefix); ok {
			uids = append(uids, strings.TrimSpace(uid))
		}
	}
	return uids
}

// describeCandidates names each same-named VM by folder, BIOS UUID and markers, sorted so that the
// report (and its Event) stays the same from pass to pass.
func describeCandidates(cands []vsphere.AdoptionCandidate) string {
	out := make([]string, 0, len(cands))
	for i := range cands {
		c := &cands[i]
		marker := "no upstream marker"
		if uids := notesMarkerUIDs(c.Notes); len(uids) > 0 {
			marker = "upstream marker " + strings.Join(uids, ",")
		}
		out = append(out, fmt.Sprintf("folder %q, BIOS UUID %s, %s", c.Folder, c.BIOSUUID, marker))
	}
	sort.Strings(out)
	return strings.Join(out, " and ")
}
