// Command vsphere (make bench-vsphere) runs the same per-VM workload two ways against one in-process
// vCenter simulator: through the operator's vSphere client with one session, and through govc CLI
// processes (one process and one login per operation, as a shell-script integration does). The workload
// per VM: create with a CD-ROM backed by a datastore ISO, disk.EnableUUID=TRUE, power on, read identity
// (BIOS UUID, instance UUID, MAC), destroy. It runs once on the default simulator and once with injected
// latency (5 ms per SOAP call, 100 ms per login), counts SOAP requests and logins per VM, prints medians
// and ends with the summary line.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var verbose bool

const (
	isoRel  = "bench/discovery.iso"
	isoPath = "[" + vcsim.Datastore + "] " + isoRel
)

// counter counts SOAP methods; one instance on the server side (every client), one on our client.
type counter struct {
	mu   sync.Mutex
	m    map[string]int
	time map[string]time.Duration
}

func newCounter() *counter { return &counter{m: map[string]int{}, time: map[string]time.Duration{}} }

func (c *counter) observe(method string, d time.Duration) {
	c.mu.Lock()
	c.time[method] += d
	c.mu.Unlock()
}

// breakdown is "method count x mean" for the calls since the last take.
func (c *counter) breakdown() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for k, v := range c.m {
		parts = append(parts, fmt.Sprintf("%s %d x %s", k, v, (c.time[k]/time.Duration(v)).Round(10*time.Microsecond)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func (c *counter) add(method string) {
	c.mu.Lock()
	c.m[method]++
	c.mu.Unlock()
}

// take returns total requests and logins since the last take, and resets.
func (c *counter) take() (total, logins int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.m {
		total += v
		if k == "Login" {
			logins += v
		}
	}
	c.m = map[string]int{}
	c.time = map[string]time.Duration{}
	return total, logins
}

type result struct {
	perVM    []time.Duration
	requests float64
	logins   float64
}

func (r result) median() time.Duration {
	s := append([]time.Duration(nil), r.perVM...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func main() {
	vms := flag.Int("vms", 12, "VMs per way and configuration")
	flag.BoolVar(&verbose, "v", false, "print our client's calls per method with their mean latency")
	flag.Parse()
	if err := run(*vms); err != nil {
		fmt.Fprintln(os.Stderr, "bench-vsphere:", err)
		os.Exit(1)
	}
}

func run(vms int) error {
	ctx := context.Background()
	govc, err := buildGovc()
	if err != nil {
		return err
	}
	env, err := vcsim.Start(vcsim.Options{})
	if err != nil {
		return err
	}
	defer env.Close()
	server := newCounter()
	// Every SOAP call the simulator serves passes this hook (govc's and ours).
	env.Map().Handler = func(_ *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		server.add(m.Name)
		return nil, nil
	}

	ours := newCounter()
	sessions := vsphere.NewSessions(vsphere.SessionOptions{WrapRoundTripper: func(next soap.RoundTripper) soap.RoundTripper {
		return vsphere.RoundTripperFunc(func(ctx context.Context, req, res soap.HasFault) error {
			ours.add(vsphere.MethodName(req))
			start := time.Now()
			err := next.RoundTrip(ctx, req, res)
			ours.observe(vsphere.MethodName(req), time.Since(start))
			return err
		})
	}})
	defer sessions.Close(ctx)
	client, err := sessions.Get(ctx, env.Credentials)
	if err != nil {
		return err
	}
	if err := client.UploadISO(ctx, vcsim.Datacenter, isoPath, bytes.NewReader(make([]byte, 1<<20)), 1<<20); err != nil {
		return err
	}
	g, err := newGovcRunner(govc, env)
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(g.home) }()
	if err := g.run("folder.create", "/DC0/vm/bench-govc"); err != nil {
		return err
	}
	// Warm our session's inventory cache once, as a running operator has it.
	if err := ourVM(ctx, client, env, "warm-up"); err != nil {
		return err
	}
	ours.take()
	server.take()

	fmt.Printf("bench-vsphere: %d VMs per way; workload per VM: create with CD-ROM (ISO), disk.EnableUUID, power on, read identity, destroy\n", vms)
	fmt.Printf("%-14s %-22s %12s %14s %10s\n", "simulator", "way", "median/VM", "requests/VM", "logins/VM")
	speedups := map[string]float64{}
	var ourReq, ourLogin float64
	for _, cfg := range []struct {
		name  string
		delay simulator.DelayConfig
	}{
		{"default", simulator.DelayConfig{}},
		{"with latency", simulator.DelayConfig{Delay: 5, MethodDelay: map[string]int{"Login": 100}}},
	} {
		// No request is in flight between phases, so the delay can be switched in place.
		env.Model.DelayConfig.Delay = cfg.delay.Delay
		env.Model.DelayConfig.MethodDelay = cfg.delay.MethodDelay

		var our result
		for i := range vms {
			start := time.Now()
			if err := ourVM(ctx, client, env, fmt.Sprintf("ours-%s-%d", strings.ReplaceAll(cfg.name, " ", "-"), i)); err != nil {
				return err
			}
			our.perVM = append(our.perVM, time.Since(start))
		}
		if verbose {
			fmt.Printf("  our calls (%s, %d VMs): %s\n", cfg.name, vms, ours.breakdown())
		}
		req, logins := ours.take()
		server.take()
		our.requests, our.logins = float64(req)/float64(vms), float64(logins)/float64(vms)

		var gr result
		for i := range vms {
			start := time.Now()
			if err := g.vm(fmt.Sprintf("govc-%s-%d", strings.ReplaceAll(cfg.name, " ", "-"), i)); err != nil {
				return err
			}
			gr.perVM = append(gr.perVM, time.Since(start))
		}
		req, logins = server.take()
		gr.requests, gr.logins = float64(req)/float64(vms), float64(logins)/float64(vms)

		fmt.Printf("%-14s %-22s %12s %14.1f %10.1f\n", cfg.name, "operator client", our.median().Round(100*time.Microsecond), our.requests, our.logins)
		fmt.Printf("%-14s %-22s %12s %14.1f %10.1f\n", cfg.name, "govc (process per op)", gr.median().Round(100*time.Microsecond), gr.requests, gr.logins)
		speedups[cfg.name] = float64(gr.median()) / float64(our.median())
		if cfg.name == "default" {
			ourReq, ourLogin = our.requests, our.logins
		}
	}
	fmt.Printf("vsphere per-VM speedup vs govc: %.1fx default, %.1fx with latency, %.1f requests/VM, %.1f logins/VM\n",
		speedups["default"], speedups["with latency"], ourReq, ourLogin)
	return nil
}

// ourVM runs the workload through the operator's client.
func ourVM(ctx context.Context, c vsphere.Client, env *vcsim.Env, name string) error {
	owner := vsphere.Ownership{OwnerUID: uuid.NewString(), OwnerName: "bench/" + name, PoolUID: "bench-pool", PoolName: "bench/pool"}
	spec := env.VMSpec(name, owner)
	spec.DatastoreCluster = vcsim.Datastore // same placement as govc's -ds
	spec.Folder = "bench-ours"
	spec.Tags = nil // govc's workload has no tags either
	spec.ISOPath = isoPath
	info, err := c.CreateVM(ctx, spec)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if info.BIOSUUID == "" || info.MACAddress == "" {
		return fmt.Errorf("create %s: identity not read back", name)
	}
	return c.DestroyVM(ctx, vcsim.Datacenter, owner.OwnerUID, owner)
}

// govcRunner runs govc processes against the simulator, one login per process (no persisted session).
type govcRunner struct {
	bin  string
	env  []string
	home string
}

func newGovcRunner(bin string, env *vcsim.Env) (*govcRunner, error) {
	home, err := os.MkdirTemp("", "bench-govc-")
	if err != nil {
		return nil, err
	}
	ca := filepath.Join(home, "ca.pem")
	if err := os.WriteFile(ca, env.Credentials.CABundle, 0o600); err != nil {
		return nil, err
	}
	return &govcRunner{bin: bin, home: home, env: append(os.Environ(),
		"HOME="+home,
		"GOVC_URL="+env.URL.String(),
		"GOVC_USERNAME="+vcsim.Username,
		"GOVC_PASSWORD="+vcsim.Password,
		"GOVC_TLS_CA_CERTS="+ca,
		"GOVC_DATACENTER="+vcsim.Datacenter,
		"GOVC_PERSIST_SESSION=false",
	)}, nil
}

func (g *govcRunner) output(args ...string) (string, error) {
	cmd := exec.Command(g.bin, args...)
	cmd.Env = g.env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("govc %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

func (g *govcRunner) run(args ...string) error {
	_, err := g.output(args...)
	return err
}

// vm is the workload as a shell script would write it with govc.
func (g *govcRunner) vm(name string) error {
	steps := [][]string{
		{"vm.create", "-ds", vcsim.Datastore, "-pool", vcsim.ResourcePool, "-folder", "/DC0/vm/bench-govc",
			"-net", vcsim.Network, "-net.adapter", "vmxnet3", "-c", "2", "-m", "4096", "-disk", "20GB",
			"-disk.controller", "pvscsi", "-g", "rhel9_64Guest", "-firmware", "efi", "-on=false", name},
	}
	for _, s := range steps {
		if err := g.run(s...); err != nil {
			return err
		}
	}
	cdrom, err := g.output("device.cdrom.add", "-vm", name)
	if err != nil {
		return err
	}
	for _, s := range [][]string{
		{"device.cdrom.insert", "-vm", name, "-device", cdrom, "-ds", vcsim.Datastore, isoRel},
		{"vm.change", "-vm", name, "-e", "disk.EnableUUID=TRUE", "-e", "agent-forge.owner-uid=" + uuid.NewString()},
		{"vm.power", "-on", name},
	} {
		if err := g.run(s...); err != nil {
			return err
		}
	}
	info, err := g.output("vm.info", "-json", name)
	if err != nil {
		return err
	}
	if !strings.Contains(info, "InstanceUuid") && !strings.Contains(info, "instanceUuid") {
		return fmt.Errorf("vm.info %s: no identity in output", name)
	}
	if err := g.run("vm.power", "-off", name); err != nil {
		return err
	}
	return g.run("vm.destroy", name)
}

// buildGovc builds bin/govc from hack/tools/govc (govmomi v0.56.0) unless it is newer than its sources.
func buildGovc() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "govc")
	src := filepath.Join(root, "hack", "tools", "govc")
	if fresh(bin, filepath.Join(src, "main.go"), filepath.Join(src, "go.mod"), filepath.Join(src, "go.sum")) {
		return bin, nil
	}
	fmt.Fprintln(os.Stderr, "bench-vsphere: building bin/govc from hack/tools/govc ...")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build govc: %w", err)
	}
	return bin, nil
}

func fresh(bin string, sources ...string) bool {
	b, err := os.Stat(bin)
	if err != nil {
		return false
	}
	for _, s := range sources {
		if st, err := os.Stat(s); err != nil || st.ModTime().After(b.ModTime()) {
			return false
		}
	}
	return true
}

func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if ok {
		if root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..")); exists(filepath.Join(root, "go.mod")) {
			return root, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if exists(filepath.Join(dir, "hack", "tools", "govc", "main.go")) {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("run from the repository")
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
