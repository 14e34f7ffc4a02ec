package world_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// runInBackground runs the driver until the test ends and checks that it returns on cancel.
func runInBackground(t *testing.T, d *world.Driver) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx, 10*time.Millisecond)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
}

// eventually polls cond every 20 ms for at most 60 s (a bound, not a timing assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 60s: %s", what)
		}
	}
}

// TestLoopsBindWhileRegistrationIsStuck shows the behaviours are independent loops, as the real
// systems are: while assisted-service is stuck registering a host, the provider still binds an Agent
// that is ready (a serial pass would wait for the registration to finish).
func TestLoopsBindWhileRegistrationIsStuck(t *testing.T) {
	s := scenario(t)
	vc := startVCenter(t)
	createVM(t, vc, "stuck-host", "[LocalDS_0] discovery.iso")
	entered, release := make(chan struct{}), make(chan struct{})
	d, err := world.New(world.Options{Client: k8s, VSphere: vc, Namespaces: s.Namespaces(), InfraEnv: &s.InfraEnv, Loops: true, Kubeconfig: kubeconfig,
		Register: func(world.VM) bool {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
			return true
		}})
	must(t, err)
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	ready := prepareAgent(t, s, "ready", true)
	runInBackground(t, d)
	t.Cleanup(func() { close(release) }) // before Run is stopped (cleanups run last-in first-out)

	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the registration loop never looked at the powered-on VM")
	}
	eventually(t, "the ready Agent bound while registration is stuck", func() bool {
		ams := list(t, "AgentMachine", s.ControlPlaneNamespace)
		return len(ams) == 1 && str(&ams[0], "status", "agentRef", "name") == ready.Name
	})
	eventually(t, "a run of the binding loop finished", func() bool { return d.Timing().Loops["binding"].Runs > 0 })
	if reg := d.Timing().Loops["registration"]; reg.RunStart.IsZero() || reg.Runs != 0 {
		t.Errorf("registration loop: want its first run still running, got %+v", reg)
	}
}

// TestLoopWorkersServeManyNodePoolsOnce runs every behaviour with several workers over several
// NodePools scaled at once: each NodePool gets exactly its replicas, each Agent one AgentMachine,
// every Machine its Node (run with -race: the workers share the driver's state).
func TestLoopWorkersServeManyNodePoolsOnce(t *testing.T) {
	const pools, replicas = 4, 3
	var scenarios []*world.Scenario
	var namespaces []string
	for i := 0; i < pools; i++ {
		ns := newNamespace(t)
		s, err := world.Setup(t.Context(), k8s, world.SetupOptions{Namespace: ns, ISOURL: "https://127.0.0.1:1/iso?api_key=x",
			AgentLabels: map[string]string{"loops.test/pool": ns}, Replicas: replicas})
		must(t, err)
		scenarios = append(scenarios, s)
		namespaces = append(namespaces, s.Namespaces()...)
		for j := 0; j < replicas; j++ {
			// Unique across namespaces, as assisted-service's host IDs are: providerID agent://<name> names
			// Nodes, and the hosted clusters here share one API server.
			prepareAgent(t, s, fmt.Sprintf("agent-%d-%s", j, ns), true)
		}
	}
	d, err := world.New(world.Options{Client: k8s, Namespaces: namespaces, Loops: true, Workers: 4, Kubeconfig: kubeconfig,
		InfraEnvFor: func(world.VM) (types.NamespacedName, bool) { return types.NamespacedName{}, false }})
	must(t, err)
	runInBackground(t, d)

	defer func() {
		if t.Failed() {
			t.Logf("timing: %+v", d.Timing().Loops)
			for _, s := range scenarios {
				for _, m := range list(t, "Machine", s.ControlPlaneNamespace) {
					t.Logf("machine %s: %v", m.GetName(), m.Object["status"])
				}
				for _, a := range list(t, "Agent", s.Namespace) {
					t.Logf("agent %s: %v %v", a.GetName(), a.GetLabels(), a.Object["status"])
				}
			}
		}
	}()
	for _, s := range scenarios {
		eventually(t, "every Machine of "+s.Namespace+" has its Node", func() bool {
			ms := list(t, "Machine", s.ControlPlaneNamespace)
			for i := range ms {
				if str(&ms[i], "status", "nodeRef", "name") == "" {
					return false
				}
			}
			return len(ms) == replicas
		})
	}
	for _, s := range scenarios {
		if ms := list(t, "Machine", s.ControlPlaneNamespace); len(ms) != replicas {
			t.Errorf("%s: %d Machines for %d replicas", s.Namespace, len(ms), replicas)
		}
		owner := map[string]string{}
		for _, a := range list(t, "Agent", s.Namespace) {
			am := a.GetLabels()[world.LabelAgentMachineRef]
			if am == "" {
				t.Errorf("%s: Agent %s not bound", s.Namespace, a.GetName())
			}
			if other, dup := owner[am]; dup {
				t.Errorf("%s: AgentMachine %s reserved Agents %s and %s", s.Namespace, am, other, a.GetName())
			}
			owner[am] = a.GetName()
		}
	}
	if d.Timing().Loops["nodepools"].Runs == 0 {
		t.Error("no run of the nodepools loop is recorded")
	}
}

// frozenReader serves each kind's first list until the test thaws it: an informer cache that lags.
// With only set, the other kinds are read live.
type frozenReader struct {
	client.Reader
	mu     sync.Mutex
	lists  map[string]*unstructured.UnstructuredList
	frozen bool
	only   string
}

func (r *frozenReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	u := list.(*unstructured.UnstructuredList)
	key := u.GetKind() + fmt.Sprint(opts)
	r.mu.Lock()
	defer r.mu.Unlock()
	if cached, ok := r.lists[key]; ok && r.frozen && (r.only == "" || r.only == u.GetKind()) {
		cached.DeepCopyInto(u)
		return nil
	}
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	r.lists[key] = u.DeepCopy()
	return nil
}

// TestLaggingListsServeEachAgentMachineOnce: with an AgentMachine list that does not show the world's own
// writes yet, the provider does not reserve a second Agent for an AgentMachine whose list still shows it
// waiting while the Agent's label is already listed (it looks for an Agent carrying its label first).
func TestLaggingListsServeEachAgentMachineOnce(t *testing.T) {
	s := scenario(t)
	first := prepareAgent(t, s, "first", true)
	second := prepareAgent(t, s, "second", true)
	reader := &frozenReader{Reader: k8s, lists: map[string]*unstructured.UnstructuredList{}}
	d, _ := newWorld(t, s, world.Options{Reader: reader, BindingDisabled: true})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	until(t, d, "an AgentMachine waits, held by the provider", func() bool {
		ws := waiting(t, s)
		return len(ws) == 1 && slices.Contains(ws[0].GetFinalizers(), world.FinalizerAgentMachine)
	})
	steps := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := d.Step(t.Context()); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
	}

	// The AgentMachine list freezes showing it waiting; the provider's first reservation labels an
	// Agent and then fails on the AgentMachine (its stale copy conflicts), as an interrupted reconcile.
	reader.mu.Lock()
	reader.lists, reader.only, reader.frozen = map[string]*unstructured.UnstructuredList{}, "AgentMachineList", true
	reader.mu.Unlock()
	steps(1)
	am := list(t, "AgentMachine", s.ControlPlaneNamespace)[0]
	bump := am.DeepCopy()
	bump.SetAnnotations(mergeMaps(am.GetAnnotations(), map[string]string{"test/touched": "yes"}))
	must(t, k8s.Update(t.Context(), bump))
	d.SetBinding(true)
	steps(3)

	var reserved []string
	for _, k := range []types.NamespacedName{first, second} {
		if get(t, "Agent", k).GetLabels()[world.LabelAgentMachineRef] != "" {
			reserved = append(reserved, k.Name)
		}
	}
	if len(reserved) != 1 {
		t.Errorf("reserved Agents %v, want exactly one for the one AgentMachine", reserved)
	}
}
