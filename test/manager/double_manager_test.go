package manager

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/exclusion"
)

// TestTwoInstallsOnlyOneActs: two installs of the real binary in different namespaces (each elects its
// own leader: the Lease is per namespace) never both act. The older install acts, the newer reports the
// other manager and stands down (metric and log), and takes over once the older one is stopped.
func TestTwoInstallsOnlyOneActs(t *testing.T) {
	// Namespaces that sort in start order: should both Leases be created in the same second (creation
	// times have second resolution), the namespace order decides, and it agrees.
	nsA := createNamespace(t, env, "double-a")
	nsB := createNamespace(t, env, "double-b")
	a := startManager(t, env, nsA, "--leader-elect=true", "--leader-election-namespace="+nsA, "--metrics-secure=false", "--other-manager-check-interval=1s")
	a.waitForProbes(t)
	waitForLease(t, env, a, nsA)
	p := adminClient(t, env)
	a.eventually(t, startTimeout, "the first install marks its Lease as this operator's", func() bool {
		l := &coordinationv1.Lease{}
		return p.Get(context.Background(), client.ObjectKey{Namespace: nsA, Name: leaseName}, l) == nil &&
			l.Labels[exclusion.MarkLabel] == exclusion.MarkValue
	})

	b := startManager(t, env, nsB, "--leader-elect=true", "--leader-election-namespace="+nsB, "--metrics-secure=false", "--other-manager-check-interval=1s")
	b.waitForProbes(t)
	holderB := waitForLease(t, env, b, nsB)

	const standingDown, acting = "agent_forge_other_manager_active 1", "agent_forge_other_manager_active 0"
	b.eventually(t, startTimeout, "the second install stands down", func() bool { return metricsContain(b, standingDown) })
	// Until the second install has marked its Lease as this operator's (its first check after acquiring
	// it), that Lease looks like upstream's, and the first install may stand down for a check: the safe
	// direction, since an unmarked Lease may be upstream 1.0.x, which destroys VMs without ownership
	// checks. From the mark on, the older install acts and the newer waits.
	b.eventually(t, startTimeout, "the second install marks its Lease as this operator's", func() bool {
		l := &coordinationv1.Lease{}
		return p.Get(context.Background(), client.ObjectKey{Namespace: nsB, Name: leaseName}, l) == nil &&
			l.Labels[exclusion.MarkLabel] == exclusion.MarkValue
	})
	a.eventually(t, startTimeout, "the first install acts again once the second install's Lease is marked", func() bool { return metricsContain(a, acting) })
	aLogBefore := len(a.output.String())
	if out := b.output.String(); !strings.Contains(out, "another agent-forge manager is active; standing down") || !strings.Contains(out, nsA) {
		t.Errorf("the second install does not log the other manager's Lease namespace %s", nsA)
	}
	// Both check every second. Over several checks with both Leases live, exactly one stands down: the
	// older install acts, the younger waits. (A real process has no clock to inject: a bounded watch.)
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		aActs, bWaits := metricsContain(a, acting), metricsContain(b, standingDown)
		if !aActs || !bWaits || !bHolds(t, nsB, holderB) {
			t.Fatalf("first install acting %t, second standing down %t (while holding its Lease): want exactly the first acting", aActs, bWaits)
		}
	}
	if strings.Contains(a.output.String()[aLogBefore:], "standing down") {
		t.Error("the older install stood down because of the younger one after its Lease was marked")
	}

	if code := a.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	b.eventually(t, startTimeout, "the second install acts once the first released its Lease", func() bool { return metricsContain(b, acting) })
	if code := b.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
}

func metricsContain(p *managerProcess, line string) bool {
	code, body, err := get(plainClient, fmtURL("http", p.metricsAddr, "/metrics"), "")
	return err == nil && code == http.StatusOK && strings.Contains(body, "\n"+line+"\n")
}

// bHolds reports whether the second install still holds its own Lease (it stood down, it did not exit).
func bHolds(t *testing.T, ns, holder string) bool {
	l := &coordinationv1.Lease{}
	if err := adminClient(t, env).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaseName}, l); err != nil {
		return false
	}
	return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == holder
}
