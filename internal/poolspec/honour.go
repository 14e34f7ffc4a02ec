package poolspec

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/vmware/govmomi/object"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// MaxNamePrefix is the longest VM name prefix used: the name gets "-" and 5 random characters and must
// fit a DNS label (63), with room to spare for hostnames derived from it.
const MaxNamePrefix = 40

// NamePrefix is spec.template.namePrefix or <hostedCluster>-<role>, cut to MaxNamePrefix characters.
func NamePrefix(pool *afv1.VsphereAgentPool) string {
	p := pool.Spec.Template.NamePrefix
	if p == "" {
		p = pool.Spec.HostedClusterRef.Name + "-" + Role(pool)
	}
	if len(p) > MaxNamePrefix {
		p = p[:MaxNamePrefix]
	}
	return strings.TrimRight(p, "-.")
}

// SpecIssue is one spec value the CRD admits (the upstream operator admitted it, so a migrated pool may
// carry it) that this operator cannot honour as written.
type SpecIssue struct {
	// Reason is the SpecHonoured reason of this kind of value.
	Reason string
	// Message names the field, the value and what to set instead.
	Message string
	// Blocks is true when a VM made with the value could only fail (or never serve the NodePool): no VM
	// is created. False for a value honoured with a visible adjustment.
	Blocks bool
}

// guestIDShape is what every vSphere guest OS identifier looks like (VirtualMachineGuestOsIdentifier:
// "rhel9_64Guest", "otherGuest64"); upstream also admitted "." and "-", which no identifier has.
var guestIDShape = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// UnhonouredSpec lists the pool's spec values this operator cannot honour as written, blocking ones
// first (in field order), then the adjusted ones. Empty: every value is used as written. Pure: the
// preflight turns it into the SpecHonoured condition.
func UnhonouredSpec(pool *afv1.VsphereAgentPool) []SpecIssue {
	var block, adjust []SpecIssue
	add := func(blocks bool, reason, format string, args ...any) {
		is := SpecIssue{Reason: reason, Message: fmt.Sprintf(format, args...), Blocks: blocks}
		if blocks {
			block = append(block, is)
		} else {
			adjust = append(adjust, is)
		}
	}
	vs, tpl := pool.Spec.VSphere, pool.Spec.Template
	if g := vs.GuestID; g != "" && !guestIDShape.MatchString(g) {
		add(true, afv1.ReasonGuestIDInvalid, "spec.vsphere.guestID %q is no vSphere guest OS identifier (they have only letters, digits and _), so vCenter refuses the VM: set e.g. rhel9_64Guest", g)
	}
	// The same constructors VM creation uses: what they refuse, creation would refuse.
	if t := vs.SCSIType; t != "" {
		if _, err := (object.VirtualDeviceList{}).CreateSCSIController(t); err != nil {
			add(true, afv1.ReasonSCSITypeUnknown, "spec.vsphere.scsiType %q is no SCSI controller type vSphere has: set pvscsi, lsilogic, lsilogic-sas or buslogic", t)
		}
	}
	if t := vs.NetworkAdapterType; t != "" {
		if _, err := (object.VirtualDeviceList{}).CreateEthernetCard(t, nil); err != nil {
			add(true, afv1.ReasonNetworkAdapterTypeUnknown, "spec.vsphere.networkAdapterType %q is no network adapter type vSphere has: set vmxnet3, e1000e or e1000", t)
		}
	}
	if m := tpl.MemoryMiB; m > 0 && m%4 != 0 {
		add(true, afv1.ReasonMemoryNotMultipleOf4, "spec.template.memoryMiB %d is not a multiple of 4, which vCenter refuses at VM creation: set %d or %d", m, m-m%4, m-m%4+4)
	}
	if r := Role(pool); r != "worker" {
		add(true, afv1.ReasonRoleNotWorker, "spec.agent.role %q: every node of a HyperShift NodePool is a worker (its control plane runs in the management cluster) and the Agent CAPI provider never changes an Agent's role, so an Agent prepared as %q is not installed as a NodePool node: set spec.agent.role: worker (and drop a %s label of another value)", r, r, afv1.LabelNodePoolRole)
	}
	if p := tpl.NamePrefix; len(p) > MaxNamePrefix {
		add(false, afv1.ReasonNamePrefixCut, "spec.template.namePrefix %q has %d characters; VM names use the first %d, %q: set a prefix of at most %d characters to name them yourself", p, len(p), MaxNamePrefix, NamePrefix(pool), MaxNamePrefix)
	}
	return append(block, adjust...)
}
