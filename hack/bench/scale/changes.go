package main

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// objectChanges watches VsphereAgents and counts, for each update the API server stored, which fields
// changed: the writes/VM figure says how many writes there were, this says what each one was for. A
// write that changed nothing stores nothing and shows only in the write count.
type objectChanges struct {
	mu      sync.Mutex
	last    map[string]*unstructured.Unstructured
	updates int
	// fields counts changed field paths (conditions keyed by type); sets counts each update's whole set.
	fields, sets map[string]int
}

// watchVsphereAgents records changes until ctx ends; a closed watch is resumed from the last version seen.
func watchVsphereAgents(ctx context.Context, cfg *rest.Config, opts client.Options) (*objectChanges, error) {
	c, err := client.NewWithWatch(cfg, opts)
	if err != nil {
		return nil, err
	}
	oc := &objectChanges{last: map[string]*unstructured.Unstructured{}, fields: map[string]int{}, sets: map[string]int{}}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(afv1.GroupVersion.WithKind("VsphereAgentList"))
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		oc.last[key(&list.Items[i])] = &list.Items[i]
	}
	rv := list.GetResourceVersion()
	go func() {
		for ctx.Err() == nil {
			w, err := c.Watch(ctx, list, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				if ctx.Err() == nil {
					logf("note: the VsphereAgent change watch ended (%v); the field counts stop there", err)
				}
				return
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error { // e.g. 410 Gone: reopening at the same version fails again at once
					w.Stop()
					if ctx.Err() == nil { // a cancelled watch ends with an error event too
						logf("note: the VsphereAgent change watch ended (%v); the field counts stop there", ev.Object)
					}
					return
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				oc.observe(ev.Type, u)
			}
			w.Stop()
		}
	}()
	return oc, nil
}

func key(u *unstructured.Unstructured) string { return u.GetNamespace() + "/" + u.GetName() }

func (oc *objectChanges) observe(t watch.EventType, u *unstructured.Unstructured) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	switch t {
	case watch.Added:
		oc.last[key(u)] = u
	case watch.Deleted:
		delete(oc.last, key(u))
	case watch.Modified:
		old := oc.last[key(u)]
		oc.last[key(u)] = u
		if old == nil {
			return
		}
		changed := map[string]bool{}
		diffFields(withoutBookkeeping(old.Object), withoutBookkeeping(u.Object), "", changed)
		if len(changed) == 0 {
			return
		}
		oc.updates++
		paths := make([]string, 0, len(changed))
		for p := range changed {
			oc.fields[p]++
			paths = append(paths, p)
		}
		sort.Strings(paths)
		oc.sets[strings.Join(paths, " + ")]++
	}
}

// withoutBookkeeping drops what changes with every stored write whatever it was for.
func withoutBookkeeping(o map[string]any) map[string]any {
	c := (&unstructured.Unstructured{Object: o}).DeepCopy().Object
	if md, ok := c["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "managedFields")
		delete(md, "generation")
	}
	return c
}

// diffFields adds to out the paths under prefix whose values differ; lists of objects with a "type"
// (conditions) are compared entry by entry, keyed by it.
func diffFields(a, b any, prefix string, out map[string]bool) {
	if reflect.DeepEqual(a, b) {
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for k := range am {
			diffFields(am[k], bm[k], join(prefix, k), out)
		}
		for k := range bm {
			if _, seen := am[k]; !seen {
				diffFields(nil, bm[k], join(prefix, k), out)
			}
		}
		return
	}
	if at, bt := byType(a), byType(b); at != nil && bt != nil {
		for t := range at {
			diffFields(at[t], bt[t], prefix+"["+t+"]", out)
		}
		for t := range bt {
			if _, seen := at[t]; !seen {
				out[prefix+"["+t+"]"] = true
			}
		}
		return
	}
	out[prefix] = true
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// byType indexes a list of objects by their "type" field; nil when v is not such a list.
func byType(v any) map[string]any {
	l, ok := v.([]any)
	if !ok && v != nil {
		return nil
	}
	out := map[string]any{}
	for _, e := range l {
		m, ok := e.(map[string]any)
		t, tok := m["type"].(string)
		if !ok || !tok {
			return nil
		}
		out[t] = m
	}
	return out
}

// log prints the updates, the fields they changed and the commonest sets, per VM.
func (oc *objectChanges) log(vms int) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	per := func(n int) string { return fmt.Sprintf("%5.2f/VM", float64(n)/float64(max(vms, 1))) }
	logf("VsphereAgent updates stored while provisioning: %d (%s); fields changed, top 20:", oc.updates, per(oc.updates))
	for i, t := range sortedTargets(oc.fields) {
		if i == 20 {
			break
		}
		logf("  %6d  %s  %s", t.n, per(t.n), t.what)
	}
	logf("VsphereAgent updates by the set of fields they changed, top 12:")
	for i, t := range sortedTargets(oc.sets) {
		if i == 12 {
			break
		}
		logf("  %6d  %s  %s", t.n, per(t.n), t.what)
	}
}
