package vsphereagent

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// adoptionEvidence reads (never writes) the VM named vmName and the Agents of its host, and lists every
// piece of evidence that disagrees (empty: the VM is upstream's for this VsphereAgent and pool). On
// mismatch no candidate is returned.
//
// Only evidence a writer of vsphereagents/status cannot forge counts: what vCenter and the Agents report
// live (the VM's name, folder, CD-ROM, Notes marker, MAC and BIOS UUID; the Agents' inventory), compared
// with the VsphereAgent's metadata and UID (vm-name annotation, agent-machine label: they need write on
// the object itself) and the pool's spec. Nothing is read back from status (status.vm.name, biosUUID,
// macAddress, ownerUID, agentRef). A VM upstream marked (1.1.0+: Notes name this VsphereAgent's UID) is
// proven by the marker; an unmarked (1.0.x) VM needs this pool's ISO in its drive and a registered Agent
// whose inventory reports its MAC and BIOS UUID.
func (r *Reconciler) adoptionEvidence(ctx context.Context, vs vsphere.Client, s *vmScope, dc, vmName string) (*vsphere.AdoptionCandidate, *agents.Agent, []string, error) {
	va, pool := s.va, s.pool
	var bad []string
	if vmName == "" {
		return nil, nil, []string{fmt.Sprintf("name: the VsphereAgent has no %s annotation (status.vm.name is not evidence: any writer of the status could set it)", afv1.AnnotationUpstreamVMName)}, nil
	}
	if am := va.Labels[afv1.LabelUpstreamAgentMachine]; am != "" && am != vmName {
		bad = append(bad, fmt.Sprintf("name: VM name %s is not the AgentMachine name %s", vmName, am))
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
	if folder, _ := poolspec.DomainOf(pool, va.Spec.FailureDomain); strings.Trim(folder.Folder, "/") != cand.Folder {
		bad = append(bad, fmt.Sprintf("folder: the VM is in %q, the pool's folder is %q", cand.Folder, strings.Trim(folder.Folder, "/")))
	}
	prefix := iso.PathPrefix(pool)
	poolISO := false
	for _, cd := range cand.CDROMs {
		switch {
		case cd.ISOPath == "":
		case iso.IsCachedISOPath(cd.ISOPath, pool.Spec.VSphere.ISODatastore, prefix):
			poolISO = true
		default:
			bad = append(bad, fmt.Sprintf("cdrom: the drive holds %s, not an ISO of this pool ([%s] %s/<sha256>.iso)", cd.ISOPath, pool.Spec.VSphere.ISODatastore, prefix))
		}
	}
	marked := len(notesMarkerUIDs(cand.Notes)) > 0
	if !marked && !poolISO {
		bad = append(bad, fmt.Sprintf("cdrom: the VM carries no upstream Notes marker, so this pool's ISO ([%s] %s/<sha256>.iso) must be in its drive", pool.Spec.VSphere.ISODatastore, prefix))
	}
	bad = append(bad, markerMismatches(va, cand)...)
	agent, agentBad, err := r.adoptionAgent(ctx, va, cand, vmName, marked)
	if err != nil {
		return nil, nil, nil, err
	}
	if bad = append(bad, agentBad...); len(bad) > 0 {
		return nil, nil, bad, nil
	}
	return cand, agent, nil, nil
}

// markerMismatches checks the ownership markers the VM carries: every upstream marker in its Notes must
// name this VsphereAgent's UID, and an extraConfig marker of ours may only name this VsphereAgent (an
// adoption whose status write was lost).
func markerMismatches(va *afv1.VsphereAgent, cand *vsphere.AdoptionCandidate) []string {
	var bad []string
	for _, uid := range notesMarkerUIDs(cand.Notes) {
		if uid != string(va.UID) {
			bad = append(bad, fmt.Sprintf("notes: the VM's upstream marker names VsphereAgent UID %s, not this VsphereAgent's %s", uid, va.UID))
		}
	}
	if o := cand.Ownership.OwnerUID; o != "" && o != string(va.UID) {
		bad = append(bad, fmt.Sprintf("marker: the VM carries this operator's marker for another owner (%s)", o))
	}
	return bad
}

// adoptionAgent reads live every Agent that lists the VM's MAC (as vCenter reports it) or that upstream
// labelled for this VM (agent-machine=vmName): each must report both the VM's MAC and its BIOS UUID as
// serial number, so an Agent registered by another host, or one spoofing the MAC, stops the adoption.
// The Agent returned is the VM's host. An unmarked VM needs one (its host proves the VM booted this
// pool's image); a marked VM may still be booting.
func (r *Reconciler) adoptionAgent(ctx context.Context, va *afv1.VsphereAgent, cand *vsphere.AdoptionCandidate, vmName string, marked bool) (*agents.Agent, []string, error) {
	list := agents.NewList(agents.AgentGVK)
	if err := r.APIReader.List(ctx, list, client.InNamespace(va.Namespace)); err != nil {
		return nil, nil, err
	}
	mac, bios := agents.NormalizeMAC(cand.MACAddress), agents.NormalizeUUID(cand.BIOSUUID)
	var host *agents.Agent
	var bad []string
	for i := range list.Items {
		a := agents.AgentFrom(&list.Items[i])
		byMAC, labelled := a.HasMAC(mac), a.Labels[afv1.LabelUpstreamAgentMachine] == vmName
		if !byMAC && !labelled {
			continue
		}
		if !byMAC {
			bad = append(bad, fmt.Sprintf("macAddress: Agent %s, labelled for VM %s, lists %v, not the VM's MAC %s", a.Name, vmName, a.MACs, cand.MACAddress))
		}
		if agents.NormalizeUUID(a.Serial) != bios {
			bad = append(bad, fmt.Sprintf("biosUUID: Agent %s reports serial number %q, not the VM's BIOS UUID %s", a.Name, a.Serial, cand.BIOSUUID))
			continue
		}
		if byMAC && host == nil {
			host = &a
		}
	}
	if host == nil && !marked && len(bad) == 0 {
		bad = append(bad, fmt.Sprintf("agent: the VM carries no upstream Notes marker, so its host must have registered an Agent reporting its MAC %s and BIOS UUID %s; none has yet", cand.MACAddress, cand.BIOSUUID))
	}
	return host, bad, nil
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
