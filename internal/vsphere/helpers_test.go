package vsphere_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// harness is one simulator plus one session cache, closed at test end.
type harness struct {
	env      *vcsim.Env
	sessions *vsphere.SessionCache
	client   vsphere.Client
	calls    *callCounter
}

// callCounter counts SOAP requests by method through SessionOptions.WrapRoundTripper.
type callCounter struct {
	mu       sync.Mutex
	byMethod map[string]int
}

func (c *callCounter) wrap(next soap.RoundTripper) soap.RoundTripper {
	return vsphere.RoundTripperFunc(func(ctx context.Context, req, res soap.HasFault) error {
		c.mu.Lock()
		c.byMethod[vsphere.MethodName(req)]++
		c.mu.Unlock()
		return next.RoundTrip(ctx, req, res)
	})
}

func (c *callCounter) snapshot() (total int, byMethod map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byMethod = map[string]int{}
	for k, v := range c.byMethod {
		byMethod[k] = v
		total += v
	}
	return total, byMethod
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	env, err := vcsim.Start(vcsim.Options{})
	if err != nil {
		t.Fatalf("start simulator: %v", err)
	}
	t.Cleanup(env.Close)
	calls := &callCounter{byMethod: map[string]int{}}
	sessions := vsphere.NewSessions(vsphere.SessionOptions{WrapRoundTripper: calls.wrap, TaskPollInterval: pollInterval})
	t.Cleanup(func() { sessions.Close(context.Background()) })
	c, err := sessions.Get(testContext(t), env.Credentials)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return &harness{env: env, sessions: sessions, client: c, calls: calls}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newOwner() vsphere.Ownership {
	return vsphere.Ownership{OwnerUID: uuid.NewString(), OwnerName: "ns/agent-1", PoolUID: "pool-uid-1", PoolName: "ns/pool-1"}
}

// isoPath is the datastore path the tests upload their ISO to.
const isoPath = "[LocalDS_0] agent-forge/ns/pool/0123abcd.iso"

// uploadISO puts a small ISO on the datastore so CD-ROM backings point at a real file.
func (h *harness) uploadISO(t *testing.T, p string) {
	t.Helper()
	if err := h.client.UploadISO(testContext(t), vcsim.Datacenter, p, bytes.NewReader(bytes.Repeat([]byte("iso"), 1000)), 3000); err != nil {
		t.Fatalf("upload %s: %v", p, err)
	}
}

// createVM creates a VM with every knob and the test ISO.
func (h *harness) createVM(t *testing.T, name string, owner vsphere.Ownership) *vsphere.VMInfo {
	t.Helper()
	spec := h.env.VMSpec(name, owner)
	spec.ISOPath = isoPath
	info, err := h.client.CreateVM(testContext(t), spec)
	if err != nil {
		t.Fatalf("CreateVM %s: %v", name, err)
	}
	return info
}

func wantClass(t *testing.T, err error, class vsphere.ErrorClass) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s error, got nil", class)
	}
	if got := vsphere.ClassOf(err); got != class {
		t.Fatalf("want class %s, got %s: %v", class, got, err)
	}
}

// pollInterval is the first task poll delay of test sessions (the production default).
var pollInterval = 5 * time.Millisecond

// adminClient is an independent simulator session for setup and assertions, logged out at test end.
func adminClient(t *testing.T, h *harness) *vim25.Client {
	t.Helper()
	c, err := h.env.Login(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Logout(context.Background()) })
	return c.Client
}
