package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/bindable"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// machineTimes is what the bench saw of one AgentMachine, on this process's clock at the moment the
// informer delivered each change.
type machineTimes struct {
	arm   arm
	burst int
	// seen is the AgentMachine's first appearance; waiting its first AgentReserved=False/NoSuitableAgents
	// (zero when the provider reserved an Agent on its first look); bound its first status.agentRef.
	seen, waiting, bound time.Time
	// owned is when CAPI's Machine controller had set the owner Machine (the provider reserves nothing before).
	owned time.Time
	// machine is the owner Machine's name; nodeReady when CAPI first recorded its Node (status.nodeRef: the
	// installed host's Node joined Ready, found by its providerID), zero before.
	machine   string
	nodeReady time.Time
}

// start is where an AgentMachine's demand->bound interval begins: the first time it was seen waiting
// with NoSuitableAgents, or, when the provider bound it on its first look and it never waited, its
// first appearance (dropping those would drop exactly the fast samples).
func (m machineTimes) start() time.Time {
	if !m.waiting.IsZero() {
		return m.waiting
	}
	return m.seen
}

// tracker follows the AgentMachines of every bench pool through an informer, and counts each arm's
// standby Agents (ready and unbound) on demand.
type tracker struct {
	c     cache.Cache
	armOf map[string]arm // by namespace (hub and control plane)

	mu       sync.Mutex
	burst    int
	machines map[types.NamespacedName]*machineTimes
	// nodeRefs is when each Machine (control-plane namespace/name) first had status.nodeRef.
	nodeRefs map[types.NamespacedName]time.Time
}

func newTracker(c cache.Cache, armOf map[string]arm) *tracker {
	return &tracker{c: c, armOf: armOf, machines: map[types.NamespacedName]*machineTimes{}, nodeRefs: map[types.NamespacedName]time.Time{}}
}

// start registers the AgentMachine handler on the cache (before or after it started).
func (t *tracker) start(ctx context.Context) error {
	am := &unstructured.Unstructured{}
	am.SetGroupVersionKind(world.AgentMachineGVK)
	inf, err := t.c.GetInformer(ctx, am)
	if err != nil {
		return err
	}
	if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj, time.Now()) },
		UpdateFunc: func(_, obj any) { t.observe(obj, time.Now()) },
	}); err != nil {
		return err
	}
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(world.MachineGVK)
	if inf, err = t.c.GetInformer(ctx, m); err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observeMachine(obj, time.Now()) },
		UpdateFunc: func(_, obj any) { t.observeMachine(obj, time.Now()) },
	})
	return err
}

// observeMachine records when a bench Machine first has its Node (status.nodeRef).
func (t *tracker) observeMachine(obj any, now time.Time) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if _, ok := t.armOf[u.GetNamespace()]; !ok {
		return
	}
	if ref, _, _ := unstructured.NestedString(u.Object, "status", "nodeRef", "name"); ref == "" {
		return
	}
	key := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.nodeRefs[key]; !seen {
		t.nodeRefs[key] = now
	}
}

// setBurst makes AgentMachines first seen from now on count toward burst b.
func (t *tracker) setBurst(b int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.burst = b
}

func (t *tracker) observe(obj any, now time.Time) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	a, ok := t.armOf[u.GetNamespace()]
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.machines[key]
	if m == nil {
		m = &machineTimes{arm: a, burst: t.burst, seen: now}
		t.machines[key] = m
	}
	if m.waiting.IsZero() && m.bound.IsZero() && world.NoSuitableAgents(u) {
		m.waiting = now
	}
	if name := ownerMachine(u); name != "" {
		if m.owned.IsZero() {
			m.owned = now
		}
		m.machine = name
	}
	if ref, _, _ := unstructured.NestedString(u.Object, "status", "agentRef", "name"); ref != "" && m.bound.IsZero() {
		m.bound = now
	}
}

// ownerMachine is the name of the AgentMachine's owner Machine ("" before CAPI set it).
func ownerMachine(u *unstructured.Unstructured) string {
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == world.MachineGVK.Kind {
			return o.Name
		}
	}
	return ""
}

// snapshot copies what the tracker saw, each AgentMachine with its Machine's Node time.
func (t *tracker) snapshot() []machineTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]machineTimes, 0, len(t.machines))
	for key, m := range t.machines {
		c := *m
		if m.machine != "" {
			c.nodeReady = t.nodeRefs[types.NamespacedName{Namespace: key.Namespace, Name: m.machine}]
		}
		out = append(out, c)
	}
	return out
}

// counts counts the AgentMachines seen, those bound, and those whose Machine has its Node.
func (t *tracker) counts() (seen, bound, nodes int) {
	for _, m := range t.snapshot() {
		seen++
		if !m.bound.IsZero() {
			bound++
		}
		if !m.nodeReady.IsZero() {
			nodes++
		}
	}
	return seen, bound, nodes
}

// census is one look at a hub namespace's VMs: free are our Agents (labelled by a pool) the provider
// could bind right now (bindable.Agent); unused are the pool's VMs (VsphereAgents, booting ones included) minus its Agents
// reserved by an AgentMachine: every VM paid for that serves no Machine.
type census struct{ free, unused int }

func (t *tracker) census(ctx context.Context) (map[string]census, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(world.AgentGVK.GroupVersion().WithKind("AgentList"))
	if err := t.c.List(ctx, l); err != nil {
		return nil, err
	}
	var vas afv1.VsphereAgentList
	if err := t.c.List(ctx, &vas); err != nil {
		return nil, err
	}
	out := map[string]census{}
	for _, va := range vas.Items {
		if _, ok := t.armOf[va.Namespace]; ok && va.DeletionTimestamp.IsZero() {
			c := out[va.Namespace]
			c.unused++
			out[va.Namespace] = c
		}
	}
	for i := range l.Items {
		a := &l.Items[i]
		if _, ok := t.armOf[a.GetNamespace()]; !ok || a.GetLabels()[afv1.LabelPool] == "" {
			continue
		}
		c := out[a.GetNamespace()]
		if a.GetLabels()[world.LabelAgentMachineRef] != "" {
			c.unused--
		} else if bindable.Agent(a) {
			c.free++
		}
		out[a.GetNamespace()] = c
	}
	return out, nil
}
