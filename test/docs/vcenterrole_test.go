package docs

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/testenv"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// govcBinaryEnv names a prebuilt govc (e.g. bin/govc from `make govc`) for the role script's test.
const govcBinaryEnv = "AGENT_FORGE_GOVC_BINARY"

const (
	rolePrincipal = "agent-forge@vsphere.local"
	roleName      = "agent-forge"
	// roleFolder is the parent of the pool's VM folder (vcsim.Folder), which the operator creates.
	roleFolder = "/" + vcsim.Datacenter + "/vm"
)

// preflightPrivileges is every privilege the preflight can ask vCenter about (every option on), per
// kind, and all of them as one sorted set.
func preflightPrivileges() (map[string][]string, []string) {
	spec := vsphere.PrivilegeSpec{EjectAfterInstall: true, RecoverDiscoveryBoot: true, PCIDevices: true, AntiAffinity: true}
	spec.Tags = []string{"zone-a"}
	perKind := vsphere.RequiredPrivileges(spec, true)
	var all []string
	for _, privs := range perKind {
		all = append(all, privs...)
	}
	slices.Sort(all)
	return perKind, slices.Compact(all)
}

// TestVCenterRoleScript runs docs/vcenter-role.sh with govc (govmomi's, built from hack/tools/govc)
// against the vCenter simulator, then reads the role back from the AuthorizationManager: it holds exactly
// the privileges the preflight checks (set equality, vCenter's implicit System.* aside), and the
// principal holds it on the object of every kind the preflight asks about, directly or through a
// propagating assignment above it.
func TestVCenterRoleScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	govc := govcBinary(ctx, t)
	env, err := vcsim.StartProcess(ctx, vcsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()

	dc := "/" + vcsim.Datacenter
	entities := map[string]string{ // preflight kind -> the object the quickstart assigns the role on
		vsphere.PrivilegeFolder:       roleFolder,
		vsphere.PrivilegeResourcePool: dc + "/host/" + vcsim.ResourcePool,
		vsphere.PrivilegeDatastore:    dc + "/datastore/" + vcsim.DatastoreCluster + "/" + vcsim.PodDatastore,
		vsphere.PrivilegeISODatastore: dc + "/datastore/" + vcsim.Datastore,
		vsphere.PrivilegeNetwork:      dc + "/network/" + vcsim.Network,
		vsphere.PrivilegeCluster:      dc + "/host/" + vcsim.Cluster,
	}
	runRoleScript(ctx, t, govc, env, map[string]string{
		"DATACENTER": dc, "FOLDER": roleFolder, "RESOURCE_POOL": entities[vsphere.PrivilegeResourcePool],
		"DATASTORE": dc + "/datastore/" + vcsim.DatastoreCluster, "ISO_DATASTORE": entities[vsphere.PrivilegeISODatastore],
		"NETWORK": entities[vsphere.PrivilegeNetwork], "CLUSTER": entities[vsphere.PrivilegeCluster],
	})

	c, err := env.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Logout(ctx) }()
	role := readRole(ctx, t, c, roleName)
	perKind, want := preflightPrivileges()
	if got := withoutSystem(role.Privilege); !slices.Equal(got, want) {
		t.Errorf("role %s holds %v\nthe preflight checks %v\nmissing %v, extra %v", roleName, got, want,
			minus(want, got), minus(got, want))
	}

	finder := find.NewFinder(c.Client, false)
	for _, kind := range slices.Sorted(maps.Keys(perKind)) {
		path := entities[kind]
		obj, err := finder.ManagedObjectList(ctx, path)
		if err != nil || len(obj) != 1 {
			t.Fatalf("%s: %v (%d objects)", path, err, len(obj))
		}
		if !holdsRole(ctx, t, c, obj[0].Object.Reference(), role.RoleId) {
			t.Errorf("%s (%s): %s does not hold role %s there (neither assigned nor propagated from above)",
				kind, path, rolePrincipal, roleName)
		}
	}

	// Run again: the role is reset to the same list (role.update), not refused as existing.
	runRoleScript(ctx, t, govc, env, map[string]string{
		"DATACENTER": dc, "FOLDER": roleFolder, "RESOURCE_POOL": entities[vsphere.PrivilegeResourcePool],
		"DATASTORE": entities[vsphere.PrivilegeISODatastore], "ISO_DATASTORE": entities[vsphere.PrivilegeISODatastore],
		"NETWORK": entities[vsphere.PrivilegeNetwork], "EXTRA_PRIVILEGES": "StorageProfile.View",
	})
	role = readRole(ctx, t, c, roleName)
	if got, want := withoutSystem(role.Privilege), slices.Sorted(slices.Values(append(want, "StorageProfile.View"))); !slices.Equal(got, want) {
		t.Errorf("after the second run with EXTRA_PRIVILEGES the role holds %v, want %v", got, want)
	}
	// One datastore for both VMs and ISOs keeps the propagating assignment.
	ds, err := finder.Datastore(ctx, entities[vsphere.PrivilegeISODatastore])
	if err != nil {
		t.Fatal(err)
	}
	perms, err := object.NewAuthorizationManager(c.Client).RetrieveEntityPermissions(ctx, ds.Reference(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(perms) != 1 || !perms[0].Propagate || perms[0].Principal != rolePrincipal {
		t.Errorf("VM and ISO datastore %s: permissions %+v, want one propagating for %s", ds.InventoryPath, perms, rolePrincipal)
	}
}

// runRoleScript runs docs/vcenter-role.sh against env with vars (plus PRINCIPAL, ROLE, GOVC and govc's
// connection variables, trusting the simulator's CA).
func runRoleScript(ctx context.Context, t *testing.T, govc string, env *vcsim.Env, vars map[string]string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, env.Credentials.CABundle, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "docs", "vcenter-role.sh"))
	cmd.Env = append(os.Environ(), "GOVC="+govc, "GOVC_URL="+env.URL.String(), "GOVC_USERNAME="+vcsim.Username,
		"GOVC_PASSWORD="+vcsim.Password, "GOVC_TLS_CA_CERTS="+ca, "GOVC_PERSIST_SESSION=false", "GOVMOMI_HOME="+dir,
		"PRINCIPAL="+rolePrincipal, "ROLE="+roleName)
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/vcenter-role.sh: %v\n%s", err, out)
	}
}

func readRole(ctx context.Context, t *testing.T, c *govmomi.Client, name string) *types.AuthorizationRole {
	t.Helper()
	roles, err := object.NewAuthorizationManager(c.Client).RoleList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	role := roles.ByName(name)
	if role == nil {
		t.Fatalf("no role %s in the simulator", name)
	}
	return role
}

// holdsRole reports whether rolePrincipal holds roleID on ref: assigned there, or on an ancestor with
// propagation (vCenter's inheritance). It walks the parents itself and reads each object's own
// permissions: the simulator does not fill Permission.Entity, which tells them apart in an inherited list.
func holdsRole(ctx context.Context, t *testing.T, c *govmomi.Client, ref types.ManagedObjectReference, roleID int32) bool {
	t.Helper()
	am := object.NewAuthorizationManager(c.Client)
	for own := true; ; own = false {
		perms, err := am.RetrieveEntityPermissions(ctx, ref, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range perms {
			if p.Principal == rolePrincipal && !p.Group && p.RoleId == roleID && (own || p.Propagate) {
				return true
			}
		}
		var e mo.ManagedEntity
		if err := property.DefaultCollector(c.Client).RetrieveOne(ctx, ref, []string{"parent"}, &e); err != nil {
			t.Fatal(err)
		}
		if e.Parent == nil {
			return false
		}
		ref = *e.Parent
	}
}

// withoutSystem drops the System.* privileges vCenter adds to every role, sorted.
func withoutSystem(privs []string) []string {
	out := slices.DeleteFunc(slices.Clone(privs), func(p string) bool { return strings.HasPrefix(p, "System.") })
	slices.Sort(out)
	return out
}

func minus(a, b []string) []string {
	return slices.DeleteFunc(slices.Clone(a), func(p string) bool { return slices.Contains(b, p) })
}

// govcBinary is $AGENT_FORGE_GOVC_BINARY or govc built from hack/tools/govc (its own module, as `make
// govc` builds it) into the test's temporary directory; the Go build cache makes repeats a link.
func govcBinary(ctx context.Context, t *testing.T) string {
	t.Helper()
	if p := os.Getenv(govcBinaryEnv); p != "" {
		return p
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "govc")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(root, "hack", "tools", "govc")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building govc (%s): %v\n%s", fmt.Sprint(cmd.Args), err, b)
	}
	return out
}
