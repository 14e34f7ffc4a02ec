package vcsim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/types"
)

// TestDenyPrivilege: the knobs change what the AuthorizationManager answers, per entity and for every
// entity, in process and in the simulator's own process; ResetPrivileges grants everything again.
func TestDenyPrivilege(t *testing.T) {
	for _, mode := range []string{"in process", "own process"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var env *Env
			var err error
			if mode == "in process" {
				env, err = Start(Options{})
			} else {
				env, err = StartProcess(ctx, Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			c, err := env.Login(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Logout(ctx) }()
			finder := find.NewFinder(c.Client, true)
			dc, err := finder.Datacenter(ctx, Datacenter)
			if err != nil {
				t.Fatal(err)
			}
			finder.SetDatacenter(dc)
			net, err := finder.Network(ctx, Network)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := finder.Datastore(ctx, Datastore)
			if err != nil {
				t.Fatal(err)
			}
			us, err := c.SessionManager.UserSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			am := object.NewAuthorizationManager(c.Client)
			privs := []string{"Network.Assign", "Datastore.AllocateSpace"}
			granted := func(ref types.ManagedObjectReference) []bool {
				t.Helper()
				res, err := methods.HasPrivilegeOnEntities(ctx, c.Client, &types.HasPrivilegeOnEntities{
					This: *c.ServiceContent.AuthorizationManager, Entity: []types.ManagedObjectReference{ref}, SessionId: us.Key, PrivId: privs})
				if err != nil {
					t.Fatal(err)
				}
				var got []bool
				for _, a := range res.Returnval[0].PrivAvailability {
					got = append(got, a.IsGranted)
				}
				return got
			}
			if g := granted(net.Reference()); !reflect.DeepEqual(g, []bool{true, true}) {
				t.Fatalf("stock answer: %v", g)
			}

			env.DenyPrivilege(Network, "Network.Assign")
			env.DenyPrivilege(AnyEntity, "Datastore.AllocateSpace")
			if g := granted(net.Reference()); !reflect.DeepEqual(g, []bool{false, false}) {
				t.Fatalf("network: %v", g)
			}
			if g := granted(ds.Reference()); !reflect.DeepEqual(g, []bool{true, false}) {
				t.Fatalf("datastore: %v", g)
			}
			if d := env.DeniedPrivileges(Network); !reflect.DeepEqual(d, []string{"Network.Assign"}) {
				t.Fatalf("DeniedPrivileges: %v", d)
			}
			res, err := am.FetchUserPrivilegeOnEntities(ctx, []types.ManagedObjectReference{net.Reference()}, Username)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range res[0].Privileges {
				if p == "Network.Assign" || p == "Datastore.AllocateSpace" {
					t.Fatalf("FetchUserPrivilegeOnEntities lists withheld %s", p)
				}
			}

			env.ResetPrivileges()
			if g := granted(net.Reference()); !reflect.DeepEqual(g, []bool{true, true}) {
				t.Fatalf("after reset: %v", g)
			}
		})
	}
}
