package controllers_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

func newAgentList() *unstructured.UnstructuredList { return agents.NewList(agents.AgentGVK) }

// eventOccurrences is how often an Event happened: the events.k8s.io recorder folds repeats into a
// series, which the core view shows as series.count (its count stays 0).
func eventOccurrences(e corev1.Event) int32 {
	if e.Series != nil {
		return max(e.Series.Count, 1)
	}
	return max(e.Count, 1)
}

// samplePoolVMs lists the pool's VMs in the simulator (by the pool's ownership marker) every 50 ms until
// the spec ends and returns the largest count seen so far.
func samplePoolVMs(p *afv1.VsphereAgentPool) func() int {
	poolUID := string(getPool(p).UID)
	var most atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if vms, err := vs.ListPoolVMs(ctx, vcsim.Datacenter, poolUID); err == nil {
				for n := int32(len(vms)); n > most.Load(); {
					most.Store(n)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	DeferCleanup(func() { cancel(); <-done })
	return func() int { return int(most.Load()) }
}

// countPoolCreates counts the simulator's CreateVM_Task calls for the pool (by its ownership marker, at
// the call) until the spec ends.
func countPoolCreates(p *afv1.VsphereAgentPool) func() int {
	poolUID := string(getPool(p).UID)
	var n atomic.Int32
	vc.OnVMCall(func(c vcsim.VMCall) {
		if c.Method == vcsim.MethodCreateVM && c.PoolUID == poolUID {
			n.Add(1)
		}
	})
	DeferCleanup(func() { vc.OnVMCall(nil) })
	return func() int { return int(n.Load()) }
}

// objectEvents counts the occurrences of the Events with reason about the object named name.
func objectEvents(ctx context.Context, ns, name, reason string) int {
	var list corev1.EventList
	if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0
	}
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			n += int(eventOccurrences(e))
		}
	}
	return n
}
