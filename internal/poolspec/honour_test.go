package poolspec

import (
	"strings"
	"testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// honourPool is a pool with the values the CRD defaults (every one honoured as written).
func honourPool(mutate func(*afv1.VsphereAgentPool)) *afv1.VsphereAgentPool {
	p := &afv1.VsphereAgentPool{}
	p.Spec.HostedClusterRef.Name = "hc"
	p.Spec.VSphere = afv1.VSphereSpec{GuestID: "rhel9_64Guest", SCSIType: "pvscsi", NetworkAdapterType: "vmxnet3"}
	p.Spec.Template = afv1.VMTemplateSpec{NumCPUs: 4, MemoryMiB: 16384}
	p.Spec.Agent.Role = "worker"
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestUnhonouredSpec(t *testing.T) {
	prefix58 := strings.Repeat("a", 30) + "-" + strings.Repeat("b", 27)
	tests := []struct {
		name   string
		mutate func(*afv1.VsphereAgentPool)
		// want is the reason of each issue, in order ("" entries none); blocks of the first.
		want   []string
		blocks bool
		// text is what the first issue's message must hold: the field, the value, what to set.
		text []string
	}{
		{name: "CRD defaults", want: nil},
		{name: "unset values take the defaults", mutate: func(p *afv1.VsphereAgentPool) {
			p.Spec.VSphere = afv1.VSphereSpec{}
			p.Spec.Template = afv1.VMTemplateSpec{}
			p.Spec.Agent.Role = ""
		}},
		{name: "upstream's sample values", mutate: func(p *afv1.VsphereAgentPool) {
			p.Spec.VSphere.GuestID, p.Spec.Template.NumCPUs, p.Spec.Template.MemoryMiB = "otherGuest64", 1, 1024
			p.Spec.VSphere.SCSIType, p.Spec.VSphere.NetworkAdapterType = "lsilogic-sas", "e1000e"
		}},
		{name: "aliases creation maps", mutate: func(p *afv1.VsphereAgentPool) {
			p.Spec.VSphere.SCSIType, p.Spec.VSphere.NetworkAdapterType = "virtualscsi", "sriov"
		}},
		{name: "40-character prefix is used whole", mutate: func(p *afv1.VsphereAgentPool) { p.Spec.Template.NamePrefix = strings.Repeat("a", 40) }},
		{name: "memory not a multiple of 4", mutate: func(p *afv1.VsphereAgentPool) { p.Spec.Template.MemoryMiB = 8190 },
			want: []string{afv1.ReasonMemoryNotMultipleOf4}, blocks: true, text: []string{"spec.template.memoryMiB 8190", "set 8188 or 8192"}},
		{name: "guest ID with a dot", mutate: func(p *afv1.VsphereAgentPool) { p.Spec.VSphere.GuestID = "rhel-9.0" },
			want: []string{afv1.ReasonGuestIDInvalid}, blocks: true, text: []string{`spec.vsphere.guestID "rhel-9.0"`, "rhel9_64Guest"}},
		{name: "unknown SCSI type", mutate: func(p *afv1.VsphereAgentPool) { p.Spec.VSphere.SCSIType = "nvme-fast" },
			want: []string{afv1.ReasonSCSITypeUnknown}, blocks: true, text: []string{`spec.vsphere.scsiType "nvme-fast"`, "pvscsi"}},
		{name: "unknown NIC type", mutate: func(p *afv1.VsphereAgentPool) { p.Spec.VSphere.NetworkAdapterType = "virtio" },
			want: []string{afv1.ReasonNetworkAdapterTypeUnknown}, blocks: true, text: []string{`spec.vsphere.networkAdapterType "virtio"`, "vmxnet3"}},
		{name: "role master", mutate: func(p *afv1.VsphereAgentPool) { p.Spec.Agent.Role = "master" },
			want: []string{afv1.ReasonRoleNotWorker}, blocks: true, text: []string{`spec.agent.role "master"`, "set spec.agent.role: worker"}},
		{name: "role auto-assign", mutate: func(p *afv1.VsphereAgentPool) { p.Spec.Agent.Role = "auto-assign" },
			want: []string{afv1.ReasonRoleNotWorker}, blocks: true},
		{name: "58-character prefix is cut, not blocked", mutate: func(p *afv1.VsphereAgentPool) { p.Spec.Template.NamePrefix = prefix58 },
			want: []string{afv1.ReasonNamePrefixCut}, blocks: false,
			text: []string{`spec.template.namePrefix "` + prefix58 + `" has 58 characters`, `"` + strings.Repeat("a", 30) + "-" + strings.Repeat("b", 9) + `"`, "at most 40"}},
		{name: "blocking values come before adjustments, every one named", mutate: func(p *afv1.VsphereAgentPool) {
			p.Spec.Template.NamePrefix, p.Spec.Template.MemoryMiB, p.Spec.Agent.Role = prefix58, 4098, "infra"
		}, want: []string{afv1.ReasonMemoryNotMultipleOf4, afv1.ReasonRoleNotWorker, afv1.ReasonNamePrefixCut}, blocks: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UnhonouredSpec(honourPool(tt.mutate))
			var reasons []string
			for _, is := range got {
				reasons = append(reasons, is.Reason)
			}
			if strings.Join(reasons, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("reasons = %v, want %v (%+v)", reasons, tt.want, got)
			}
			if len(got) == 0 {
				return
			}
			if got[0].Blocks != tt.blocks {
				t.Errorf("Blocks = %v, want %v", got[0].Blocks, tt.blocks)
			}
			for _, want := range tt.text {
				if !strings.Contains(got[0].Message, want) {
					t.Errorf("message %q lacks %q", got[0].Message, want)
				}
			}
		})
	}
}

func TestNamePrefix(t *testing.T) {
	for _, tt := range []struct{ prefix, hc, role, want string }{
		{"", "hc", "", "hc-worker"},
		{"", strings.Repeat("h", 39), "", strings.Repeat("h", 39)}, // cut before the "-", which is trimmed
		{"w", "hc", "", "w"},
		{strings.Repeat("x", 39) + "-y", "hc", "", strings.Repeat("x", 39)},
		{strings.Repeat("z", 58), "hc", "", strings.Repeat("z", 40)},
	} {
		p := &afv1.VsphereAgentPool{}
		p.Spec.Template.NamePrefix, p.Spec.HostedClusterRef.Name, p.Spec.Agent.Role = tt.prefix, tt.hc, tt.role
		if got := NamePrefix(p); got != tt.want {
			t.Errorf("NamePrefix(%q, %q) = %q, want %q", tt.prefix, tt.hc, got, tt.want)
		}
	}
}
