package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// foreignPerNamespace spreads the foreign objects as other hosted clusters would: a few hundred each.
const foreignPerNamespace = 500

// createForeign creates n objects no pool uses, an even mix of Agents, Machines and AgentMachines
// (kind i%3) in namespaces foreign-NN, each with the metadata, spec and status the world driver (or
// CAPI, for Machines) writes for its own, so that the operator's informers hold what a shared hub
// holds. workers create in parallel.
func createForeign(ctx context.Context, c client.Client, n, workers int) error {
	nss := (n + foreignPerNamespace - 1) / foreignPerNamespace
	for i := range nss {
		if err := world.CreateNamespace(ctx, c, foreignNamespace(i)); err != nil {
			return err
		}
	}
	next, done := atomic.Int64{}, atomic.Int64{}
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := createWithStatus(ctx, c, foreignObject(i)); err != nil {
					errs <- fmt.Errorf("foreign object %d: %w", i, err)
					return
				}
				if d := done.Add(1); d%2000 == 0 {
					logf("foreign objects: %d/%d created (%.0f s)", d, n, time.Since(start).Seconds())
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func foreignNamespace(i int) string { return fmt.Sprintf("foreign-%02d", i) }

// createWithStatus creates obj and then writes its status through the status subresource, as the
// owning controllers do (a create drops the status).
func createWithStatus(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	status := obj.Object["status"]
	delete(obj.Object, "status")
	if err := c.Create(ctx, obj); err != nil {
		return err
	}
	obj.Object["status"] = status
	return c.Status().Update(ctx, obj)
}

// foreignObject is the i-th foreign object: host i of namespace i/foreignPerNamespace.
func foreignObject(i int) *unstructured.Unstructured {
	ns := foreignNamespace(i / foreignPerNamespace)
	uuid := fmt.Sprintf("4210%04x-%04x-%04x-%04x-%012x", i>>16, i&0xffff, 0xf0f0, 0xabcd, i)
	agent := world.AgentNameFor(uuid)
	now := time.Now().UTC().Format(time.RFC3339)
	host := fmt.Sprintf("host-%05d.foreign.example.com", i)
	switch i % 3 {
	case 0:
		return foreignAgent(ns, agent, uuid, host, i, now)
	case 1:
		return foreignMachine(ns, fmt.Sprintf("np-%05d", i), agent, host, now)
	default:
		return foreignAgentMachine(ns, fmt.Sprintf("np-%05d", i), agent, host, now)
	}
}

func newForeign(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// cond is a condition as the objects' owners write it (empty reason or message left out).
func cond(typ, status, reason, msg, now string) map[string]any {
	c := map[string]any{"type": typ, "status": status, "lastTransitionTime": now}
	if reason != "" {
		c["reason"] = reason
	}
	if msg != "" {
		c["message"] = msg
	}
	return c
}

// foreignAgent: the Agent assisted-service writes for a registered host (world.Driver.createAgent's shape).
func foreignAgent(ns, name, uuid, host string, i int, now string) *unstructured.Unstructured {
	a := newForeign(world.AgentGVK, ns, name)
	a.SetLabels(map[string]string{world.LabelInfraEnv: "ie"})
	a.Object["spec"] = map[string]any{"approved": false, "role": ""}
	a.Object["status"] = map[string]any{
		"role": "auto-assign", "bootstrap": false,
		"inventory": map[string]any{
			"hostname": host,
			"interfaces": []any{map[string]any{
				"name": "ens192", "macAddress": fmt.Sprintf("00:50:56:%02x:%02x:%02x", (i>>16)&0xff, (i>>8)&0xff, i&0xff),
				"speedMbps": int64(10000), "mtu": int64(1500), "hasCarrier": true, "vendor": "0x15ad", "product": "0x07b0",
				"flags":         []any{"up", "broadcast", "running", "multicast"},
				"ipV4Addresses": []any{fmt.Sprintf("10.%d.%d.%d/16", 100+(i>>16)&0xff, (i>>8)&0xff, i&0xff)}, "ipV6Addresses": []any{},
			}},
			"systemVendor": map[string]any{"serialNumber": world.SerialFromBIOSUUID(uuid), "productName": "VMware7,1",
				"manufacturer": "VMware, Inc.", "virtual": true},
		},
		"debugInfo": map[string]any{"state": "known-unbound"},
		"conditions": []any{
			cond(world.CondSpecSynced, "True", "SyncOK", "The Spec has been successfully applied", now),
			cond(world.CondConnected, "True", world.ReasonAgentIsConnected, "The agent's connection to the installation service is unimpaired", now),
			cond(world.CondValidated, "True", world.ReasonValidationsPassing, "The agent's validations are passing", now),
			cond(world.CondBound, "False", world.ReasonUnbound, "The agent is not bound to any cluster deployment", now),
			cond(world.CondInstalled, "False", world.ReasonInstallationNotStarted, "The installation has not yet started", now),
			cond(world.CondRequirementsMet, "False", "AgentIsNotApproved", "The agent is not approved", now),
		},
	}
	return a
}

// foreignMachine: a running CAPI Machine of another hosted cluster's NodePool.
func foreignMachine(ns, name, agent, host, now string) *unstructured.Unstructured {
	m := newForeign(world.MachineGVK, ns, name)
	m.SetLabels(map[string]string{world.LabelClusterName: "foreign", "cluster.x-k8s.io/deployment-name": "np", "cluster.x-k8s.io/set-name": "np-5d8f7c"})
	m.SetAnnotations(map[string]string{world.AnnotationNodePool: "clusters-foreign/np"})
	m.Object["spec"] = map[string]any{
		"clusterName":       "foreign",
		"bootstrap":         map[string]any{"dataSecretName": "user-data-np-5d8f7c"},
		"infrastructureRef": map[string]any{"apiGroup": world.AgentMachineGVK.Group, "kind": world.AgentMachineGVK.Kind, "name": name},
		"providerID":        "agent://" + agent,
		"version":           "4.18.0",
	}
	m.Object["status"] = map[string]any{
		"phase":     "Running",
		"nodeRef":   map[string]any{"name": host},
		"addresses": []any{map[string]any{"type": "InternalDNS", "address": host}},
		"conditions": []any{
			cond("Available", "True", "Available", "Machine is available", now),
			cond("Ready", "True", "Ready", "Machine is ready", now),
			cond("NodeHealthy", "True", "NodeHealthy", "Node is healthy", now),
		},
	}
	return m
}

// foreignAgentMachine: a ready AgentMachine of another hosted cluster, its Agent reserved.
func foreignAgentMachine(ns, name, agent, host, now string) *unstructured.Unstructured {
	am := newForeign(world.AgentMachineGVK, ns, name)
	am.SetLabels(map[string]string{world.LabelClusterName: "foreign"})
	am.SetAnnotations(map[string]string{world.AnnotationNodePool: "clusters-foreign/np"})
	am.Object["spec"] = map[string]any{"agentLabelSelector": map[string]any{"matchLabels": map[string]any{"pool": "foreign"}}}
	am.Object["status"] = map[string]any{
		"ready":     true,
		"agentRef":  map[string]any{"name": agent, "namespace": "foreign-agents"},
		"addresses": []any{map[string]any{"type": "InternalDNS", "address": host}},
		"conditions": []any{
			cond(world.CondAgentReserved, "True", world.ReasonAgentReserved, "The Agent is reserved", now),
			cond(world.CondAgentSpecSynced, "True", world.ReasonAgentConditionTrue, "The Spec has been successfully applied", now),
			cond(world.CondAgentValidated, "True", world.ReasonAgentConditionTrue, "The agent's validations are passing", now),
			cond(world.CondAgentRequirementsMet, "True", world.ReasonAgentConditionTrue, "Installation already started and is progressing", now),
			cond(world.CondAgentMachineInstalled, "True", world.ReasonInstallationCompleted, "The installation has completed: Done", now),
			cond(world.CondReady, "True", world.ReasonAgentConditionTrue, "The AgentMachine is ready", now),
		},
	}
	return am
}
