package iso

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// TestScenariosOnSimulator runs every scenario against our vSphere client on govmomi's simulator
// (VPX model): real uploads through the datastore HTTP endpoint, datastore browser searches, file
// manager moves and deletes, and VMs whose CD-ROMs hold the cached ISOs.
func TestScenariosOnSimulator(t *testing.T) {
	env, err := vcsim.Start(vcsim.Options{})
	if err != nil {
		t.Fatalf("start simulator: %v", err)
	}
	t.Cleanup(env.Close)
	sessions := vsphere.NewSessions(vsphere.SessionOptions{TaskPollInterval: time.Millisecond})
	t.Cleanup(func() { sessions.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	client, err := sessions.Get(ctx, env.Credentials)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	moves := countMoves(env)
	counted := &countingClient{Client: client}
	localDir := datastoreDir(t, env, vcsim.Datastore)
	for i, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			b := simBackend(t, env, counted, localDir, fmt.Sprintf("sim%d", i))
			b.moves = func() int { return int(moves.Load()) }
			b.uploads = func() int { return int(counted.uploads.Load()) }
			s.run(t, b)
		})
	}
}

// countMoves counts the simulator's MoveDatastoreFile_Task calls, whoever makes them (a rule that
// matches every move and never injects a fault).
func countMoves(env *vcsim.Env) *atomic.Int64 {
	var n atomic.Int64
	env.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "MoveDatastoreFile_Task", ObjectType: "*", ObjectName: "*",
		Enabled: true, Probability: 1, InclusionPropertyFilter: func(mo.Reference) bool { n.Add(1); return false }})
	return &n
}

// countingClient counts datastore uploads through the vSphere client.
type countingClient struct {
	vsphere.Client
	uploads atomic.Int64
}

func (c *countingClient) UploadFile(ctx context.Context, dc, p string, r io.Reader, size int64) error {
	c.uploads.Add(1)
	return c.Client.UploadFile(ctx, dc, p, r, size)
}

func (c *countingClient) UploadISO(ctx context.Context, dc, p string, r io.Reader, size int64) error {
	c.uploads.Add(1)
	return c.Client.UploadISO(ctx, dc, p, r, size)
}

// datastoreDir is the local folder backing a simulator datastore.
func datastoreDir(t *testing.T, env *vcsim.Env, name string) string {
	for _, e := range env.Map().All("Datastore") {
		if ds, ok := e.(*simulator.Datastore); ok && ds.Name == name {
			return ds.Info.GetDatastoreInfo().Url
		}
	}
	t.Fatalf("no datastore %s", name)
	return ""
}

var simVMs atomic.Int64

func simBackend(t *testing.T, env *vcsim.Env, client vsphere.Client, localDir, namespace string) backend {
	local := func(p string) string {
		var dp struct{ ds, rel string }
		open, closeIdx := strings.Index(p, "["), strings.Index(p, "] ")
		dp.ds, dp.rel = p[open+1:closeIdx], p[closeIdx+2:]
		return filepath.Join(localDir, filepath.FromSlash(dp.rel))
	}
	ctx := t.Context()
	return backend{
		client: client, datacenter: vcsim.Datacenter, datastore: vcsim.Datastore, namespace: namespace,
		attach: func(t *testing.T, isoPath string) func() {
			owner := vsphere.Ownership{OwnerUID: uuid.NewString(), OwnerName: namespace + "/other-agent", PoolUID: "other-pool", PoolName: "other/pool"}
			spec := env.VMSpec(fmt.Sprintf("iso-holder-%d", simVMs.Add(1)), owner)
			spec.ISOPath = isoPath
			if _, err := client.CreateVM(ctx, spec); err != nil {
				t.Fatalf("CreateVM: %v", err)
			}
			// Powered off still counts as attached.
			admin, err := env.Login(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = admin.Logout(context.Background()) }()
			vm := vcsim.NewObjectVM(admin, env.VMByInstanceUUID(owner.OwnerUID).Self)
			if task, err := vm.PowerOff(ctx); err != nil || task.Wait(ctx) != nil {
				t.Fatalf("power off: %v", err)
			}
			return func() {
				if err := client.DestroyVM(ctx, vcsim.Datacenter, owner.OwnerUID, owner); err != nil {
					t.Fatalf("DestroyVM: %v", err)
				}
			}
		},
		failDeletes: func(_ *testing.T, n int) {
			env.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "DeleteDatastoreFile_Task", ObjectType: "*",
				ObjectName: "*", Probability: 1, FaultType: simulator.FaultTypeCustom, Fault: &types.FileLocked{}, MaxCount: n, Enabled: true})
		},
		put: func(t *testing.T, p string, content []byte, modified time.Time) {
			f := local(p)
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(f, modified, modified); err != nil {
				t.Fatal(err)
			}
		},
		read: func(_ *testing.T, p string) ([]byte, bool) {
			b, err := os.ReadFile(local(p))
			return b, err == nil
		},
		list: func(t *testing.T, dir string) []string {
			files, err := client.ListFiles(ctx, vcsim.Datacenter, dir)
			if err != nil {
				t.Fatalf("ListFiles %s: %v", dir, err)
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
			}
			return names
		},
	}
}
