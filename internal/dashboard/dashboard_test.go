package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/dashboard"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// The installer against a real API server (envtest with OwnerReferencesPermissionEnforcement, as on
// OpenShift). envtest runs no namespace or garbage collector, so the steps run in order: without owner,
// without namespace, installed, restored, refused; and the bundle's narrow grants are shown to suffice
// (and each of create-by-apply and delete-for-ownerReferences to be needed). Removal on uninstall is the
// garbage collector's, from the owner reference checked here.

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{WithoutExternalCRDs: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

const waitFor = 30 * time.Second

// countingWriter counts Apply calls: one per pass that found the ConfigMap missing or different.
type countingWriter struct {
	dashboard.Writer
	applies atomic.Int32
}

func (w *countingWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	defer w.applies.Add(1)
	return w.Writer.Apply(ctx, obj, opts...)
}

// logLines collects what the installer logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(_, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

func (l *logLines) containing(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last error %v)", what, waitFor, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the API server for an asynchronous outcome, not a timer
	}
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func getDashboard(ctx context.Context, c client.Client) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	return cm, c.Get(ctx, types.NamespacedName{Namespace: dashboard.Namespace, Name: dashboard.Name}, cm)
}

func TestInstaller(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := newClient(t, env.Config)
	const interval = time.Minute
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	writer := &countingWriter{Writer: admin}
	logs := &logLines{}
	inst := &dashboard.Installer{Reader: admin, Writer: writer, Clock: clk, Interval: interval, Log: logs.logger()}

	t.Run("without the owner ClusterRole nothing is written", func(t *testing.T) {
		if got, err := inst.Sync(ctx); err != nil || got != dashboard.OwnerAbsent {
			t.Fatalf("Sync = %q, %v; want OwnerAbsent", got, err)
		}
		if writer.applies.Load() != 0 {
			t.Fatal("applied without an owner: nothing would remove the ConfigMap")
		}
	})

	owner := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: dashboard.OwnerClusterRole},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if err := admin.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- inst.Start(runCtx) }()
	defer func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v", err)
			}
		case <-time.After(waitFor):
			t.Error("Start did not return after its context ended")
		}
	}()
	// Start passes once at once, then on every tick; pass steps the fake clock to the next one and waits
	// until it has reached Apply.
	eventually(t, "the first pass applied", func() (bool, error) { return writer.applies.Load() == 1, nil })
	pass := func(t *testing.T) {
		t.Helper()
		before := writer.applies.Load()
		clk.Step(interval)
		eventually(t, "a pass applied", func() (bool, error) { return writer.applies.Load() > before, nil })
	}

	t.Run("without the namespace (not OpenShift): no error, logged once, still running", func(t *testing.T) {
		pass(t)
		pass(t)
		select {
		case err := <-done:
			t.Fatalf("Start returned %v without the namespace", err)
		default:
		}
		if n := logs.containing(`"reason"="NamespaceAbsent"`); n != 1 {
			t.Errorf("logged the absent namespace %d times over 3 passes, want once: %v", n, logs.lines)
		}
		if _, err := getDashboard(ctx, admin); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap: %v, want NotFound", err)
		}
	})

	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dashboard.Namespace}}); err != nil {
		t.Fatal(err)
	}

	t.Run("created with the console label, the embedded JSON and the ClusterRole as owner", func(t *testing.T) {
		pass(t)
		var cm *corev1.ConfigMap
		eventually(t, "ConfigMap created", func() (bool, error) {
			var err error
			cm, err = getDashboard(ctx, admin)
			return err == nil, err
		})
		if cm.Labels[dashboard.Label] != "true" {
			t.Errorf("labels %v, want %s=true", cm.Labels, dashboard.Label)
		}
		if cm.Data[dashboard.DataKey] != dashboard.JSON() || !json.Valid([]byte(cm.Data[dashboard.DataKey])) {
			t.Errorf("data[%s] is not the embedded dashboard JSON", dashboard.DataKey)
		}
		want := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: owner.Name, UID: owner.UID}
		if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0] != want {
			t.Errorf("ownerReferences %+v, want [%+v]", cm.OwnerReferences, want)
		}
		if n := logs.containing("console dashboard written"); n != 1 {
			t.Errorf("logged the write %d times, want once", n)
		}
	})

	t.Run("a changed ConfigMap is restored on the next pass", func(t *testing.T) {
		cm, err := getDashboard(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[dashboard.DataKey] = `{"title":"edited"}`
		delete(cm.Labels, dashboard.Label)
		if err := admin.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		pass(t)
		eventually(t, "ConfigMap restored", func() (bool, error) {
			cm, err := getDashboard(ctx, admin)
			return err == nil && cm.Data[dashboard.DataKey] == dashboard.JSON() && cm.Labels[dashboard.Label] == "true", err
		})
	})

	t.Run("a current ConfigMap is left alone", func(t *testing.T) {
		before, err := getDashboard(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := inst.Sync(ctx); err != nil || got != dashboard.Current {
			t.Fatalf("Sync = %q, %v; want Current", got, err)
		}
		after, err := getDashboard(ctx, admin)
		if err != nil || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("resourceVersion %s -> %s (%v): a current dashboard was written", before.ResourceVersion, after.ResourceVersion, err)
		}
	})

	t.Run("refused by RBAC: Forbidden, no error", func(t *testing.T) {
		nobody := newClient(t, impersonating("nobody"))
		i := &dashboard.Installer{Reader: nobody, Writer: nobody, Clock: clk, Log: logr.Discard()}
		if got, err := i.Sync(ctx); err != nil || got != dashboard.Forbidden {
			t.Fatalf("Sync = %q, %v; want Forbidden", got, err)
		}
	})
}

func impersonating(user string) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// TestShippedGrantsSuffice: the CSV's rules for the dashboard (get on the owner ClusterRole; get, create,
// patch, delete on this one ConfigMap, all by name) let the installer create and restore it; without
// create the server-side apply cannot create it, without delete the API server refuses to set its
// ownerReferences again on an existing ConfigMap (OwnerReferencesPermissionEnforcement).
func TestShippedGrantsSuffice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := newClient(t, env.Config)
	shipped, err := testenv.ShippedPermissions()
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, r := range shipped.Cluster {
		if slices.Contains(r.Resources, "configmaps") || slices.Contains(r.Resources, "clusterroles") {
			// The pools' caBundleRef watch reads ConfigMaps by metadata without names; it writes nothing
			// and is not the dashboard's, so it is left out of the grants proven here.
			if slices.Equal(r.Resources, []string{"configmaps"}) && len(r.ResourceNames) == 0 && readOnly(r.Verbs) {
				continue
			}
			if len(r.Resources) != 1 || len(r.ResourceNames) != 1 {
				t.Fatalf("rule %+v: want one resource, restricted to one name", r)
			}
			rules = append(rules, r)
		}
	}
	if len(rules) != 2 {
		t.Fatalf("the CSV grants %d rules for configmaps and clusterroles, want 2: %+v", len(rules), rules)
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dashboard.Namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: dashboard.OwnerClusterRole}},
	} {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// installerAs binds rules to user, clears the ConfigMap and returns an installer acting as user once
	// its grants are in effect.
	installerAs := func(t *testing.T, user string, rules []rbacv1.PolicyRule) *dashboard.Installer {
		t.Helper()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		for _, o := range []client.Object{role, binding} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		if err := admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: dashboard.Namespace, Name: dashboard.Name}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		c := newClient(t, impersonating(user))
		eventually(t, "RBAC of "+user+" in effect", func() (bool, error) {
			err := c.Get(ctx, types.NamespacedName{Name: dashboard.OwnerClusterRole}, &rbacv1.ClusterRole{})
			return err == nil, err
		})
		return &dashboard.Installer{Reader: c, Writer: c, Log: logr.Discard()}
	}
	sync := func(t *testing.T, inst *dashboard.Installer, want dashboard.Outcome) {
		t.Helper()
		if got, err := inst.Sync(ctx); err != nil || got != want {
			t.Fatalf("Sync = %q, %v; want %s", got, err, want)
		}
	}
	// dropOwner removes the owner reference, as if the ClusterRole had been re-created with a new UID.
	dropOwner := func(t *testing.T) {
		t.Helper()
		cm, err := getDashboard(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		cm.OwnerReferences = nil
		if err := admin.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	withoutVerb := func(verb string) []rbacv1.PolicyRule {
		var cut []rbacv1.PolicyRule
		for _, r := range rules {
			r = *r.DeepCopy()
			if r.Resources[0] == "configmaps" {
				r.Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool { return v == verb })
			}
			cut = append(cut, r)
		}
		return cut
	}

	t.Run("shipped: created, then its owner reference restored", func(t *testing.T) {
		inst := installerAs(t, "dashboard-shipped", rules)
		sync(t, inst, dashboard.Applied)
		dropOwner(t)
		sync(t, inst, dashboard.Applied)
		cm, err := getDashboard(ctx, admin)
		if err != nil || cm.Data[dashboard.DataKey] != dashboard.JSON() || len(cm.OwnerReferences) != 1 {
			t.Fatalf("ConfigMap after Sync: %v %+v", err, cm)
		}
	})
	t.Run("without create: not created", func(t *testing.T) {
		sync(t, installerAs(t, "dashboard-without-create", withoutVerb("create")), dashboard.Forbidden)
		if _, err := getDashboard(ctx, admin); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap: %v, want NotFound", err)
		}
	})
	t.Run("without delete: created, but its owner reference cannot be set again", func(t *testing.T) {
		inst := installerAs(t, "dashboard-without-delete", withoutVerb("delete"))
		sync(t, inst, dashboard.Applied)
		dropOwner(t)
		sync(t, inst, dashboard.Forbidden)
	})
}

// readOnly reports whether verbs grant reading only.
func readOnly(verbs []string) bool {
	for _, v := range verbs {
		if v != "get" && v != "list" && v != "watch" {
			return false
		}
	}
	return true
}
