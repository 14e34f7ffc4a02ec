package pool

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/tlstrust/tlstrusttest"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// TestVCenterByIPWithAnotherNamesCertificate: the pool's preflight against a vCenter (the simulator
// behind a real TLS endpoint) reached as https://127.0.0.1 that presents a trusted CA's certificate for
// vcenter.example.com only sets VSphereReachable=False VCenterCertificateRejected and records one
// Warning Event with that reason; the same CA's certificate with 127.0.0.1 in its IP SANs connects.
func TestVCenterByIPWithAnotherNamesCertificate(t *testing.T) {
	env, err := vcsim.Start(vcsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	ca := tlstrusttest.NewCA(t)
	store := newSecretStore(t)
	preflight := func(t *testing.T, front string) (metav1.Condition, []string) {
		t.Helper()
		pool := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "pool-1", Generation: 2}}
		pool.Spec.VSphere.CredentialsSecretRef.Name = "vc-creds"
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "vc-creds"}, Data: map[string][]byte{
			"server": []byte(front + "/sdk"), "username": []byte(vcsim.Username), "password": []byte(vcsim.Password),
			"caBundle": ca.PEM,
		}}
		rec := kevents.NewFakeRecorder(8)
		sessions := vsphere.NewSessions(vsphere.SessionOptions{LoginTimeout: 30 * time.Second})
		t.Cleanup(func() { sessions.Close(context.Background()) })
		r := &Reconciler{APIReader: store(t, secret), Recorder: events.NewRecorder(rec),
			Opts: config.Options{Services: config.Services{Clock: clocktesting.NewFakeClock(time.Now()), Sessions: sessions}}}
		s := &poolScope{pool: pool}
		if err := r.connectVSphere(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		var conds []metav1.Condition
		setVSphereReachable(&conds, s.vsErr, s.creds.Server, pool.Generation)
		var evs []string
		for len(rec.Events) > 0 {
			evs = append(evs, <-rec.Events)
		}
		return *conditions.FindCondition(conds, afv1.ConditionVSphereReachable), evs
	}

	wrong := tlstrusttest.Front(t, "127.0.0.1:0", ca.Server(t, []string{"vcenter.example.com"}), env.URL, env.Credentials.CABundle)
	c, evs := preflight(t, wrong.URL)
	t.Logf("condition %s %s: %s; events %q", c.Status, c.Reason, c.Message, evs)
	if c.Status != metav1.ConditionFalse || c.Reason != afv1.ReasonVCenterCertificateRejected || !strings.Contains(c.Message, "127.0.0.1") {
		t.Fatalf("VSphereReachable %s/%s %q, want False/%s naming 127.0.0.1", c.Status, c.Reason, c.Message, afv1.ReasonVCenterCertificateRejected)
	}
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+afv1.ReasonVCenterCertificateRejected+" ") {
		t.Fatalf("events %q, want one Warning %s", evs, afv1.ReasonVCenterCertificateRejected)
	}

	right := tlstrusttest.Front(t, "127.0.0.1:0", ca.Server(t, []string{"vcenter.example.com"}, net.IPv4(127, 0, 0, 1)), env.URL, env.Credentials.CABundle)
	c, evs = preflight(t, right.URL)
	if c.Status != metav1.ConditionTrue || len(evs) != 0 {
		t.Fatalf("VSphereReachable %s/%s %q, events %q: want connected", c.Status, c.Reason, c.Message, evs)
	}
}
