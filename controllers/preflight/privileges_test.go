package preflight

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestMissingPrivilegesMessage(t *testing.T) {
	cases := []struct {
		name    string
		missing []vsphere.MissingPrivileges
		want    []string
	}{
		{"one entity", []vsphere.MissingPrivileges{{Kind: vsphere.PrivilegeNetwork, Name: "VM Network", Privileges: []string{"Network.Assign"}}},
			[]string{"network VM Network: Network.Assign"}},
		{"every entity named with its privileges", []vsphere.MissingPrivileges{
			{Kind: vsphere.PrivilegeFolder, Name: "/DC/vm", Privileges: []string{"Folder.Create", "VirtualMachine.Inventory.Create"}},
			{Kind: vsphere.PrivilegeDatastore, Name: "ds1 (in datastore cluster pod)", Privileges: []string{"Datastore.AllocateSpace"}},
			{Kind: vsphere.PrivilegeISODatastore, Name: "iso", Privileges: []string{"Datastore.Browse"}},
			{Kind: vsphere.PrivilegeResourcePool, Name: "/DC/host/C/Resources", Privileges: []string{"Resource.AssignVMToPool"}},
		}, []string{"VM folder /DC/vm: Folder.Create, VirtualMachine.Inventory.Create",
			"datastore ds1 (in datastore cluster pod): Datastore.AllocateSpace", "ISO datastore iso: Datastore.Browse",
			"resource pool /DC/host/C/Resources: Resource.AssignVMToPool"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := missingPrivilegesMessage(tc.missing)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if !strings.HasSuffix(msg, "no VM is created") {
				t.Errorf("message %q does not say nothing is created", msg)
			}
		})
	}
}

func TestPrivilegeSpecAndMemoKey(t *testing.T) {
	p := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: types.UID("u1")}}
	p.Spec.HostedClusterRef.Name = "hc"
	p.Spec.ISO.EjectAfterInstall = true
	spec := poolspec.PlacementSpec(p, poolspec.Domains(p)[0])
	if spec.Folder != "hc" {
		t.Fatalf("poolspec.PlacementSpec: %+v", spec)
	}
	a, b := privilegesMemoKey(p, "alice"), privilegesMemoKey(p, "bob")
	p2 := p.DeepCopy()
	p2.UID = "u2"
	if a == b || a == privilegesMemoKey(p2, "alice") {
		t.Fatalf("memo keys must differ per account and per pool UID: %q %q", a, b)
	}
}
