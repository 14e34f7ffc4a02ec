// Package harness starts everything the operator needs on loopback — a real kube-apiserver + etcd
// (envtest) with our CRDs and the external CRD fixtures, govmomi's vCenter simulator, a discovery-ISO
// server, the world driver playing HyperShift/CAPI/assisted-service — plus the operator itself (the
// real manager binary, or the controllers in-process), and stops it all again in reverse order.
// Used by `make demo`, the end-to-end test and `make bench-scale`.
//
//	h, err := harness.Start(ctx, harness.Options{})
//	defer h.Close()
//	s, _ := h.Scenario(ctx, world.SetupOptions{Namespace: "clusters"})
//	d, _ := h.StartWorld(world.Options{Namespaces: s.Namespaces()}, 200*time.Millisecond)
//	m, _ := h.StartManagerProcess(ctx, harness.ProcessOptions{Binary: "bin/manager"})
package harness

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vmware/govmomi"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/capicore"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/testenv"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Options tune Start. The zero value is usable.
type Options struct {
	// Progress receives one line per startup step (nil: silent).
	Progress func(msg string)
	// ISOSize is the generated discovery ISO's size (default 256 KiB: the cache path is exercised,
	// the demo stays fast).
	ISOSize int64
	// VCSim tunes the simulator (latency injection for benchmarks).
	VCSim vcsim.Options
	// ISOTLS serves the discovery ISO over HTTPS with this configuration (e.g. sim.PrivateCA's); nil: HTTP.
	ISOTLS *tls.Config
	// LegacyAgentProvider installs the AgentMachine CRD of older Agent CAPI providers (for a world with
	// Provider: world.ProviderUIDLabel); see testenv.Options.LegacyAgentProvider.
	LegacyAgentProvider bool
}

// Harness is a running set of loopback components. Close stops everything it started.
type Harness struct {
	// Env is the API server; Client talks to it with our scheme (uncached).
	Env    *testenv.Env
	Client client.Client
	// VC is the vCenter simulator; VSphere an admin session through our vSphere layer for inspection.
	VC      *vcsim.Env
	VSphere vsphere.Client
	// ISO serves the discovery image; its URL (with api_key) goes into InfraEnvs.
	ISO *sim.ISOServer
	// CAPI is Cluster API core (Cluster, MachineDeployment, MachineSet and Machine controllers) running
	// for real in its own process against the API server: it, not the world, makes and deletes Machines.
	CAPI *capicore.Process
	// Kubeconfig reaches the API server as cluster-admin (for the world's hosted-cluster Secrets).
	Kubeconfig []byte

	progress func(string)
	sessions *vsphere.SessionCache
	govmomi  *govmomi.Client // the world's SOAP session

	mu       sync.Mutex
	identity *testenv.Identity // the operator's ServiceAccount, provisioned on first use
	stops    []namedStop       // run in reverse order by Close
	closed   bool
	tempDir  string
}

type namedStop struct {
	name string
	stop func() error
}

// Start brings up the API server, the simulator and the ISO server. On error everything already
// started is stopped again.
func Start(ctx context.Context, o Options) (_ *Harness, err error) {
	// h is not the named result: the error returns below set that to nil, while the stop functions
	// registered with onClose still read h's fields when the deferred Close runs them.
	h := &Harness{progress: o.Progress}
	if h.progress == nil {
		h.progress = func(string) {}
	}
	defer func() {
		if err != nil {
			_ = h.Close()
		}
	}()
	if h.tempDir, err = os.MkdirTemp("", "agent-forge-harness-"); err != nil {
		return nil, err
	}
	h.onClose("temp dir", func() error { return os.RemoveAll(h.tempDir) })

	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		h.progress("building kube-apiserver + etcd from source (one-time, ~5-10 min; progress on stderr)")
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	if err := os.Setenv("KUBEBUILDER_ASSETS", assets); err != nil {
		return nil, err
	}
	h.progress("starting kube-apiserver + etcd (envtest) with our CRDs and the HyperShift/CAPI/Assisted CRD fixtures")
	env, err := startEnv(ctx, testenv.Options{LegacyAgentProvider: o.LegacyAgentProvider})
	if err != nil {
		return nil, err
	}
	h.Env = env
	h.onClose("kube-apiserver + etcd", env.Stop)
	if h.Client, err = client.New(env.Config, client.Options{Scheme: env.Scheme}); err != nil {
		return nil, err
	}
	if h.Kubeconfig, err = capicore.Kubeconfig(env.Config); err != nil {
		return nil, err
	}
	h.progress("starting Cluster API " + capicore.Version + " (its real Cluster, MachineDeployment, MachineSet and Machine controllers, built once into bin/peers)")
	if h.CAPI, err = capicore.Start(ctx, env.Config, capicore.Options{LogPath: filepath.Join(h.tempDir, "capi-core.log")}); err != nil {
		return nil, fmt.Errorf("starting Cluster API core: %w", err)
	}
	h.onClose("Cluster API core", h.CAPI.Stop)

	h.progress(fmt.Sprintf("starting the vCenter simulator (datacenter %s, cluster %s, datastores %s + cluster %s, network %s, tags %v)",
		vcsim.Datacenter, vcsim.Cluster, vcsim.Datastore, vcsim.DatastoreCluster, vcsim.Network, vcsim.Tags))
	// In its own process: the operator reaches it over a real socket, and its internal data races stay
	// out of -race test binaries, so they run the production worker counts.
	if h.VC, err = vcsim.StartProcess(ctx, o.VCSim); err != nil {
		return nil, fmt.Errorf("starting the vCenter simulator: %w", err)
	}
	h.onClose("vCenter simulator", func() error { h.VC.Close(); return nil })
	h.sessions = vsphere.NewSessions(vsphere.SessionOptions{})
	h.onClose("vSphere sessions", func() error { h.sessions.Close(context.Background()); return nil })
	if h.VSphere, err = h.sessions.Get(ctx, h.VC.Credentials); err != nil {
		return nil, fmt.Errorf("logging in to the simulator: %w", err)
	}
	if h.govmomi, err = h.VC.Login(ctx); err != nil {
		return nil, fmt.Errorf("logging in to the simulator: %w", err)
	}
	h.onClose("world vSphere session", func() error { return h.govmomi.Logout(context.Background()) })

	size := o.ISOSize
	if size == 0 {
		size = 256 << 10
	}
	h.ISO = sim.NewISOServer(sim.ISOServerOptions{Seed: 1, Size: size, ETag: true, LastModified: true, TLSConfig: o.ISOTLS})
	h.onClose("ISO server", func() error { h.ISO.Close(); return nil })
	h.progress("serving a generated discovery ISO on " + h.ISO.BaseURL())
	return h, nil
}

// startEnv starts envtest; a cancelled ctx stops it as soon as it is up.
func startEnv(ctx context.Context, o testenv.Options) (*testenv.Env, error) {
	type result struct {
		env *testenv.Env
		err error
	}
	ch := make(chan result, 1)
	go func() {
		env, err := testenv.Start(o)
		ch <- result{env, err}
	}()
	select {
	case r := <-ch:
		return r.env, r.err
	case <-ctx.Done():
		// Wait for the start to finish (envtest bounds it) and stop it, so no process outlives us.
		if r := <-ch; r.err == nil {
			_ = r.env.Stop()
		}
		return nil, ctx.Err()
	}
}

// onClose registers a stop function; Close runs them in reverse order.
func (h *Harness) onClose(name string, stop func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stops = append(h.stops, namedStop{name, stop})
}

// Close stops everything started, newest first, and returns the joined errors. Safe to call twice.
func (h *Harness) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	stops := h.stops
	h.stops = nil
	h.mu.Unlock()
	var errs []error
	for i := len(stops) - 1; i >= 0; i-- {
		if err := stops[i].stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", stops[i].name, err))
		}
	}
	return errors.Join(errs...)
}

// VCenterURL is the simulator's SDK URL with the demo user's credentials (for the credentials Secret).
func (h *Harness) VCenterURL() *url.URL {
	u := *h.VC.URL
	u.User = url.UserPassword(vcsim.Username, vcsim.Password)
	return &u
}

// Scenario creates a hub scenario (namespaces, HostedCluster, NodePool, InfraEnv with this harness's
// ISO URL, credentials Secret pointing at the simulator with insecure "true").
func (h *Harness) Scenario(ctx context.Context, o world.SetupOptions) (*world.Scenario, error) {
	if o.ISOURL == "" {
		o.ISOURL = h.ISO.URL()
	}
	if o.VCenter == nil {
		o.VCenter = h.VCenterURL()
	}
	return world.Setup(ctx, h.Client, o)
}

// StartWorld runs a world driver (Step every interval) until Close. Client, VSphere and Datacenter
// default to this harness's.
func (h *Harness) StartWorld(o world.Options, interval time.Duration) (*world.Driver, error) {
	return h.StartWorldUntil(context.Background(), o, interval)
}

// StartWorldUntil is StartWorld whose driver also stops when ctx ends (several worlds in turn on one
// harness).
func (h *Harness) StartWorldUntil(parent context.Context, o world.Options, interval time.Duration) (*world.Driver, error) {
	if o.Client == nil {
		o.Client = h.Client
	}
	if o.VSphere == nil {
		o.VSphere = h.govmomi.Client
	}
	if o.Datacenter == "" {
		o.Datacenter = vcsim.Datacenter
	}
	if o.Kubeconfig == nil {
		o.Kubeconfig = h.Kubeconfig
	}
	d, err := world.New(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx, interval)
	}()
	h.onClose("world driver", func() error {
		cancel()
		select {
		case <-done:
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("world driver did not stop within 30s")
		}
	})
	return d, nil
}

// WriteKubeconfig writes a kubeconfig for a cluster-admin user of the API server to path
// (client-certificate authentication, loopback only) and returns path. For people and fixtures, never
// for the operator (see OperatorIdentity).
func (h *Harness) WriteKubeconfig(path string) (string, error) {
	user, err := h.Env.AddUser(envtest.User{Name: "agent-forge-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding an API server user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// OperatorIdentity provisions (once) the operator's ServiceAccount with exactly the permissions the
// shipped CSV grants, and returns it: the manager, in-process or as a binary, runs as that identity,
// never as cluster-admin, so a missing or needless grant shows in the tests.
func (h *Harness) OperatorIdentity(ctx context.Context) (*testenv.Identity, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.identity != nil {
		return h.identity, nil
	}
	id, err := h.Env.OperatorIdentity(ctx, testenv.IdentityOptions{})
	if err != nil {
		return nil, fmt.Errorf("provisioning the operator's ServiceAccount: %w", err)
	}
	h.identity = id
	return id, nil
}

// TempDir is a directory removed by Close.
func (h *Harness) TempDir() string { return h.tempDir }
