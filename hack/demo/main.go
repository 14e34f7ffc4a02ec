// Command demo runs the whole operator loop on loopback: an embedded kube-apiserver + etcd, the real
// Cluster API core controllers (v1.14.2, their own process: they make and delete the Machines), the
// vCenter simulator, a discovery-ISO server over HTTPS signed by a private CA (trusted by the manager only
// through the injected trust bundle, which the demo fills and projects as OpenShift's Cluster Network
// Operator and the kubelet would), a world driver playing HyperShift, the Agent CAPI provider
// and assisted-service, and the real manager binary. It plays the autoscaler (NodePool 0 → 3 → 5 → 2 by default), shows a live
// table, checks invariants and ends with one summary line; exit code 1 when an invariant failed.
//
// Env: DEMO_SCALE=<peak replicas> (default 5), DEMO_KEEP=1 (keep running until Ctrl-C and print a
// kubeconfig), DEMO_REQUIRE_EJECT=0|1 (default: follow the sample's spec.iso.ejectAfterInstall; when
// required, a run where ejection did not start and finish on every worker is a violation; 0 tolerates a
// build that never ejects, 1 requires ejection even from a pool that did not opt in),
// DEMO_ZONES=<n> (2..8: the simulator gets n clusters, the pool one failure domain per cluster; the summary
// adds how the VMs spread and the zone labels are an invariant),
// DEMO_STATIC_IPS=1 (the same scenario on a static-IP pool: no DHCP, addresses leased from an IPAM pool),
// DEMO_STANDBY=<n> (0..20, default 0: the pool keeps n warm standby VMs; the demo waits for them before the
// scale-up, the first Agents bind from them at once, and the summary adds the standby figures).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/capicore"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/testenv"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// outDir holds the manager binary, its log and the kept kubeconfig (relative to the repo root).
const outDir = "bin/demo"

func main() {
	os.Exit(run())
}

func run() int {
	ctrllog.SetLogger(logr.Discard()) // our own clients' logs would garble the live table
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := configFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 2
	}
	v := newView(os.Stdout)
	t := harness.NewTracker()
	d := &demo{cfg: cfg, v: v, t: t, staticSeen: map[string]bool{}, backingSeen: map[string]bool{}, plateauSeen: map[string]bool{}}
	runErr := d.run(ctx)
	interrupted := ctx.Err() != nil
	if runErr != nil && !interrupted {
		t.Violate("scenario failed: %v", runErr)
	}
	if d.stopCluster != nil {
		d.stopCluster()
	}
	if d.h != nil {
		v.println("stopping: the CNO and kubelet stand-ins, manager process, world driver, ISO server, vCenter simulator, Cluster API core, kube-apiserver + etcd")
		if err := d.h.Close(); err != nil {
			v.println("cleanup: %v", err)
		}
	}
	v.clear()
	for _, msg := range t.Violations() {
		fmt.Println("VIOLATION:", msg)
	}
	if interrupted {
		fmt.Println("interrupted")
	}
	fmt.Println(t.Summary("demo"))
	switch {
	case len(t.Violations()) > 0:
		return 1
	case interrupted && !cfg.keep:
		return 130
	}
	return 0
}

type config struct {
	peak, first, final int
	keep               bool
	// requireEject is DEMO_REQUIRE_EJECT: "" follows the pool's spec.iso.ejectAfterInstall, "1" requires
	// ejection, "0" tolerates a build that never ejects.
	requireEject string
	// zones is the number of failure domains (simulated clusters); 0 without.
	zones     int
	staticIPs bool
	// standby is spec.standby of the demo's pool (DEMO_STANDBY); 0 without.
	standby int
}

func configFromEnv() (config, error) {
	c := config{peak: 5}
	if s := os.Getenv("DEMO_SCALE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 200 {
			return c, fmt.Errorf("DEMO_SCALE=%q: want an integer 1..200", s)
		}
		c.peak = n
	}
	c.first = max(1, (c.peak*3+2)/5)
	c.final = max(1, (c.peak*2+2)/5)
	if c.final >= c.peak {
		c.final = c.peak - 1
	}
	if s := os.Getenv("DEMO_ZONES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 || n > 8 {
			return c, fmt.Errorf("DEMO_ZONES=%q: want an integer 2..8", s)
		}
		c.zones = n
	}
	c.keep = os.Getenv("DEMO_KEEP") == "1"
	switch c.requireEject = os.Getenv("DEMO_REQUIRE_EJECT"); c.requireEject {
	case "", "0", "1":
	default:
		return c, fmt.Errorf("DEMO_REQUIRE_EJECT=%q: want 0, 1 or unset (follow the sample's spec.iso.ejectAfterInstall)", c.requireEject)
	}
	c.staticIPs = os.Getenv("DEMO_STATIC_IPS") == "1"
	if s := os.Getenv("DEMO_STANDBY"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 20 {
			return c, fmt.Errorf("DEMO_STANDBY=%q: want an integer 0..20", s)
		}
		c.standby = n
	}
	return c, nil
}

type demo struct {
	cfg  config
	v    *view
	t    *harness.Tracker
	h    *harness.Harness
	sc   *scene
	door *doorLocker
	// zoneSeen dedupes zone invariant messages (DEMO_ZONES).
	zoneSeen map[string]bool
	// staticSeen are the static-IP violations already recorded (each once).
	staticSeen map[string]bool
	// backingSeen are the Machines already reported for a destroyed backing VM (each once).
	backingSeen map[string]bool
	// plateauSeen are the plateau violations already recorded (each once).
	plateauSeen map[string]bool
	// fig are the warm standby figures so far (DEMO_STANDBY).
	fig harness.StandbyFigures
	// ejectRequired: a run where not every worker's ISO ejection started and finished is a violation.
	ejectRequired bool
	// ca signs the ISO server's certificate; stopCluster ends the demo's CNO and kubelet stand-ins.
	ca          *sim.PrivateCA
	stopCluster context.CancelFunc
}

func (d *demo) run(ctx context.Context) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	begin := time.Now()
	standby := ""
	if d.cfg.standby > 0 {
		standby = fmt.Sprintf(" with a warm standby of %d", d.cfg.standby)
	}
	d.v.println("agent-forge demo: NodePool 0 → %d → %d → %d%s on an embedded API server and vCenter simulator", d.cfg.first, d.cfg.peak, d.cfg.final, standby)
	d.v.println("==> building the manager binary (go build ./cmd -> %s/manager)", outDir)
	bin, err := harness.BuildManager(ctx, filepath.Join(outDir, "manager"))
	if err != nil {
		return err
	}
	ca, isoTLS, err := newISOTrust()
	if err != nil {
		return err
	}
	d.ca = ca
	d.h, err = harness.Start(ctx, harness.Options{Progress: func(msg string) { d.v.println("==> %s", msg) },
		VCSim: vcsim.Options{Clusters: d.cfg.zones}, ISOTLS: isoTLS})
	if err != nil {
		return err
	}
	d.v.println("%s", capiLine(ctx, root, d.h))
	d.door = newDoorLocker(d.h.VC)
	if d.sc, err = setupScene(ctx, d, filepath.Join(root, outDir), bin); err != nil {
		return err
	}
	d.v.println("==> ready after %.0fs; playing the autoscaler", time.Since(begin).Seconds())
	if err := d.scenario(ctx); err != nil {
		return err
	}
	d.v.println("==> scenario done in %.0fs (%.0fs including startup)", time.Since(d.sc.started).Seconds(), time.Since(begin).Seconds())
	if d.cfg.keep {
		kc, err := d.h.WriteKubeconfig(filepath.Join(root, outDir, "kubeconfig"))
		if err != nil {
			return err
		}
		d.v.println("DEMO_KEEP=1: everything keeps running until Ctrl-C. Browse with:")
		d.v.println("  kubectl --kubeconfig %s get vap,va -A", kc)
		d.v.println("  kubectl --kubeconfig %s get agents,machinedeployments,machinesets,machines,agentmachines -A", kc)
		d.v.println("  manager log: %s", filepath.Join(root, outDir, "manager.log"))
		<-ctx.Done()
	}
	return nil
}

// capiLine says, in one line, that the real Cluster API controllers (not the world) decide which
// Machines exist, with their version, binary and PID.
func capiLine(ctx context.Context, root string, h *harness.Harness) string {
	bin, err := capicore.Binary(ctx) // the binary harness.Start ran (cached for this process)
	if err != nil {
		bin = "?"
	} else if rel, err := filepath.Rel(root, bin); err == nil && !strings.HasPrefix(rel, "..") {
		bin = rel
	}
	return fmt.Sprintf("==> Cluster API %s core controllers (real, %s, pid %d) decide which Machines exist: the MachineDeployment's MachineSet creates them and picks the ones deleted on scale-down",
		capicore.Version, bin, h.CAPI.PID())
}

// errStopped wraps a wait aborted by Ctrl-C.
var errStopped = errors.New("stopped")
