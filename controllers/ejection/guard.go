package ejection

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/periodic"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=vsphereagents.agent-forge.containeroo.ch

// vsphereAgentCRD is the CRD whose served schema must keep the ejection recovery record.
const vsphereAgentCRD = "vsphereagents.agent-forge.containeroo.ch"

// Guard refuses ejections while the served VsphereAgent CRD would prune any recovery field of
// status.isoEjection (CRDs older than the controller). It checks at start and every interval (a
// manager runnable), and on demand when its last answer is older than the interval; a change of
// verdict is reported to the pools (their CRDsCurrent condition) through OnChange.
type Guard struct {
	// Reader reads the served CRD (uncached: the manager's API reader).
	Reader client.Reader
	// Clock times the checks (tests inject a fake).
	Clock clock.WithTicker
	// Interval is how old a verdict may be before it is checked again (Options.SchemaCheckInterval).
	Interval time.Duration
	// Log reports changes of verdict.
	Log logr.Logger
	// OnChange is called when the verdict changes (the pools' CRDsCurrent condition follows it).
	OnChange func()

	mu      sync.Mutex
	checked time.Time
	ok      bool
	reason  string
	msg     string
}

// recoveryFields are the JSON names of every field of the recovery record, from the Go type itself (a
// field added to the record is guarded without touching this code).
func recoveryFields() []string {
	t := reflect.TypeOf(afv1.ISOEjectionRecord{})
	out := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// Start checks now and then every interval until ctx ends.
func (g *Guard) Start(ctx context.Context) error {
	return periodic.Every(ctx, g.Clock, g.Interval, g.check)
}

// Supported reports whether ejections may run, with the reason when they may not.
func (g *Guard) Supported(ctx context.Context) (bool, string) {
	g.mu.Lock()
	fresh := !g.checked.IsZero() && g.Clock.Since(g.checked) < g.Interval
	ok, msg := g.ok, g.msg
	g.mu.Unlock()
	if fresh {
		return ok, msg
	}
	g.check(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ok, g.msg
}

// Condition returns the pool condition (status, reason, message); ok=false before the first check.
func (g *Guard) Condition() (checked, ok bool, reason, msg string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.checked.IsZero(), g.ok, g.reason, g.msg
}

func (g *Guard) check(ctx context.Context) {
	ok, reason, msg := g.evaluate(ctx)
	if ctx.Err() != nil {
		return // stopping: not a verdict
	}
	g.mu.Lock()
	changed := g.checked.IsZero() || ok != g.ok || msg != g.msg
	g.checked, g.ok, g.reason, g.msg = g.Clock.Now(), ok, reason, msg
	g.mu.Unlock()
	outdated := 0.0
	if !ok {
		outdated = 1
	}
	metrics.CRDSchemaOutdated.WithLabelValues(vsphereAgentCRD).Set(outdated)
	if changed {
		if ok {
			g.Log.Info("the served VsphereAgent CRD keeps every ejection recovery field")
		} else {
			g.Log.Info("ISO ejection disabled: "+msg, "reason", reason)
		}
		if g.OnChange != nil {
			g.OnChange()
		}
	}
}

// evaluate reads the served CRD and lists the recovery fields its schema would prune.
func (g *Guard) evaluate(ctx context.Context) (bool, string, string) {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := g.Reader.Get(ctx, types.NamespacedName{Name: vsphereAgentCRD}, crd); err != nil {
		return false, afv1.ReasonCRDUnreadable, "cannot read the VsphereAgent CRD to confirm it preserves status.isoEjection: " + err.Error()
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if m["name"] != afv1.GroupVersion.Version {
			continue
		}
		missing := prunedFields(m)
		if len(missing) == 0 {
			return true, afv1.ReasonCRDsCurrent, "the served VsphereAgent CRD keeps every status.isoEjection recovery field"
		}
		return false, afv1.ReasonCRDsOutdated, "the served VsphereAgent CRD is older than the controller and would prune status.isoEjection." +
			strings.Join(missing, ", status.isoEjection.") + "; no ejection starts until the bundle's CRDs are applied with the controller"
	}
	return false, afv1.ReasonCRDsOutdated, "the served VsphereAgent CRD has no version " + afv1.GroupVersion.Version +
		"; no ejection starts until the bundle's CRDs are applied with the controller"
}

// prunedFields lists the recovery fields a served version's schema does not keep.
func prunedFields(version map[string]any) []string {
	status, found, _ := unstructured.NestedMap(version, "schema", "openAPIV3Schema", "properties", "status")
	if !found {
		return []string{"(all: no status schema)"}
	}
	if keep, _, _ := unstructured.NestedBool(status, "x-kubernetes-preserve-unknown-fields"); keep {
		return nil
	}
	rec, found, _ := unstructured.NestedMap(status, "properties", "isoEjection")
	if !found {
		return recoveryFields()
	}
	if keep, _, _ := unstructured.NestedBool(rec, "x-kubernetes-preserve-unknown-fields"); keep {
		return nil
	}
	props, _, _ := unstructured.NestedMap(rec, "properties")
	var missing []string
	for _, f := range recoveryFields() {
		if _, ok := props[f]; !ok {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	return missing
}
