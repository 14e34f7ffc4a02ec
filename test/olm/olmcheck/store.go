package olmcheck

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UIDPrefix marks a placeholder in object fixtures: "uid:<Kind>/<name>" stands for the UID of that
// stored object, known only once it is created.
const UIDPrefix = "uid:"

// resolveUIDs replaces every placeholder in v (a decoded YAML value) with the UID it names.
func resolveUIDs(t T, v any, uids map[string]string) any {
	t.Helper()
	switch x := v.(type) {
	case string:
		if ref, ok := strings.CutPrefix(x, UIDPrefix); ok {
			uid, found := uids[ref]
			if !found {
				t.Fatalf("fixture names the UID of %s before it is stored", ref)
			}
			return uid
		}
	case map[string]any:
		for k, e := range x {
			x[k] = resolveUIDs(t, e, uids)
		}
	case []any:
		for i, e := range x {
			x[i] = resolveUIDs(t, e, uids)
		}
	}
	return v
}

// StoreObjects creates each fixture object (status stripped, placeholders resolved) and then writes
// its status through the status subresource, as the upstream operator did; uids collects the UIDs
// (key "<Kind>/<name>"). It returns the stored objects. Each write is repeated until the server keeps
// every value of the fixture: right after a CRD update the API server may still serve the previous
// schema for a moment (and a fixture value the served schema does not know fails the test here rather
// than later).
func StoreObjects(ctx context.Context, t T, c client.Client, objs []*unstructured.Unstructured, uids map[string]string) []*unstructured.Unstructured {
	t.Helper()
	stored := make([]*unstructured.Unstructured, len(objs))
	for i, fixture := range objs {
		want := fixture.DeepCopy()
		delete(want.Object, "status")
		EnsureNamespace(ctx, t, c, want.GetNamespace())
		want.Object = resolveUIDs(t, want.Object, uids).(map[string]any)
		untilKept(ctx, t, "spec of "+want.GetName(), want, func(ctx context.Context) (*unstructured.Unstructured, error) {
			probe := want.DeepCopy()
			return probe, c.Create(ctx, probe, client.DryRunAll)
		})
		obj := want.DeepCopy()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("storing %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		uids[obj.GetKind()+"/"+obj.GetName()] = string(obj.GetUID())
		stored[i] = obj
	}
	for i, fixture := range objs {
		if status, ok := fixture.Object["status"]; ok {
			WriteStatus(ctx, t, c, stored[i], resolveUIDs(t, runtime.DeepCopyJSONValue(status), uids))
		}
	}
	return stored
}

// WriteStatus replaces obj's status with status (a decoded JSON value) through the status
// subresource, repeated until the server keeps every value; obj is updated to what was stored.
func WriteStatus(ctx context.Context, t T, c client.Client, obj *unstructured.Unstructured, status any) {
	t.Helper()
	want := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	untilKept(ctx, t, "status of "+obj.GetName(), want, func(ctx context.Context) (*unstructured.Unstructured, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil, err
		}
		obj.Object["status"] = runtime.DeepCopyJSONValue(want.Object["status"])
		return obj, c.Status().Update(ctx, obj)
	})
}

// untilKept repeats write until the object it returns keeps every spec and status value of want.
func untilKept(ctx context.Context, t T, what string, want *unstructured.Unstructured, write func(context.Context) (*unstructured.Unstructured, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := write(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		lost := LostLeaves(want, got)
		last = strings.Join(lost, "; ")
		return len(lost) == 0, nil
	})
	if err != nil {
		t.Fatalf("the API server never kept the %s: %s", what, last)
	}
}

// leafValues flattens a decoded object into path -> scalar (lists by index), to compare what survives.
func leafValues(v any, prefix string, out map[string]any) map[string]any {
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, e := range x {
			leafValues(e, prefix+"."+k, out)
		}
	case []any:
		for i, e := range x {
			leafValues(e, fmt.Sprintf("%s[%d]", prefix, i), out)
		}
	default:
		out[prefix] = fmt.Sprint(x)
	}
	return out
}

// LostLeaves lists the leaves of before (spec and status) that after lacks or changed.
func LostLeaves(before, after *unstructured.Unstructured) []string {
	var lost []string
	for _, part := range []string{"spec", "status"} {
		b := leafValues(before.Object[part], part, map[string]any{})
		a := leafValues(after.Object[part], part, map[string]any{})
		for path, want := range b {
			if got, ok := a[path]; !ok || got != want {
				lost = append(lost, fmt.Sprintf("%s: %v -> %v", path, want, got))
			}
		}
	}
	sort.Strings(lost)
	return lost
}
