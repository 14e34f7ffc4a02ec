package pool

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// credentialsInput is one credentials Secret as the fuzz test builds it.
type credentialsInput struct {
	server, username, password, thumbprint, caBundle string
}

// credentialsOutput is everything the pool writes about a credentials Secret in one pass: the
// VSphereReachable condition message, the Event notes (as the API would receive them) and the log lines.
type credentialsOutput struct {
	err       error
	condition metav1.Condition
	events    []string
	logs      []string
}

func (o credentialsOutput) texts() []string {
	out := append([]string{o.condition.Message, o.condition.Reason}, o.events...)
	return append(out, o.logs...)
}

// secretStore stores the credentials Secret a run reads and returns the reader the pool reads it with.
type secretStore func(t testing.TB, secret *corev1.Secret) client.Reader

// newSecretStore starts a real API server (envtest) for t with the namespace the runs use and returns
// a store on it.
func newSecretStore(t testing.TB) secretStore {
	t.Helper()
	_, c := testenv.StartForTest(t, testenv.Options{WithoutExternalCRDs: true})
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-1"}}); err != nil {
		t.Fatal(err)
	}
	return apiServerSecretStore(c)
}

// apiServerSecretStore stores the Secret on a real API server (envtest), created or replaced, and
// reads it back as the operator does (an uncached read).
func apiServerSecretStore(c client.Client) secretStore {
	return func(t testing.TB, secret *corev1.Secret) client.Reader {
		t.Helper()
		ctx := context.Background()
		var stored corev1.Secret
		err := c.Get(ctx, client.ObjectKeyFromObject(secret), &stored)
		switch {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, secret.DeepCopy())
		case err == nil:
			stored.Data = secret.Data
			err = c.Update(ctx, &stored)
		}
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// runCredentials drives the pool's real credentials path (connectVSphere: the Secret read, its
// validation, the login) with in, the Secret stored by store, and a session cache whose logins end at
// once (a 1 ns login deadline: the TLS settings are built and checked, no packet leaves), then sets
// VSphereReachable as setStatus does. Logs go to a sink that keeps every line at every verbosity; the
// error a pass returns is logged the way controller-runtime logs a Reconciler error.
func runCredentials(t testing.TB, in credentialsInput, store secretStore) credentialsOutput {
	t.Helper()
	var logs []string
	sink := funcr.New(func(prefix, args string) { logs = append(logs, prefix+" "+args) }, funcr.Options{Verbosity: 10})
	ctx := logr.NewContext(context.Background(), sink)

	pool := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "pool-1", Generation: 3}}
	pool.Spec.VSphere.CredentialsSecretRef.Name = "vc-creds"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "vc-creds"}, Data: map[string][]byte{
		"server": []byte(in.server), "username": []byte(in.username), "password": []byte(in.password),
		"thumbprint": []byte(in.thumbprint), "caBundle": []byte(in.caBundle),
	}}
	rec := kevents.NewFakeRecorder(16)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := &Reconciler{
		APIReader: store(t, secret),
		Recorder:  events.NewRecorder(rec),
		Opts: config.Options{Services: config.Services{Clock: clk, Sessions: vsphere.NewSessions(vsphere.SessionOptions{
			Logger: sink.WithName("vsphere"), Clock: clk, LoginTimeout: time.Nanosecond,
		})}},
	}
	s := &poolScope{pool: pool, log: sink}
	if err := r.connectVSphere(ctx, s); err != nil {
		t.Fatalf("connectVSphere: %v", err)
	}
	if s.vsErr != nil {
		ctrl.LoggerFrom(ctx).Error(s.vsErr, "Reconciler error", "controller", "vsphereagentpool",
			"VsphereAgentPool", map[string]string{"namespace": pool.Namespace, "name": pool.Name})
	}
	var conds []metav1.Condition
	setVSphereReachable(&conds, s.vsErr, s.creds.Server, pool.Generation)
	out := credentialsOutput{err: s.vsErr, logs: logs}
	if c := conditions.FindCondition(conds, afv1.ConditionVSphereReachable); c != nil {
		out.condition = *c
	}
	for len(rec.Events) > 0 {
		out.events = append(out.events, <-rec.Events)
	}
	return out
}

// secretsOf lists what in holds that must never be written: the Secret's password, the password of
// the server value's user info and the values of its query.
func secretsOf(in credentialsInput) []string {
	out := []string{in.password}
	authority := in.server
	if _, rest, ok := strings.Cut(authority, "://"); ok {
		authority = rest
	}
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		if _, pw, ok := strings.Cut(authority[:i], ":"); ok {
			out = append(out, pw)
		}
	}
	if _, query, ok := strings.Cut(in.server, "?"); ok {
		query, _, _ = strings.Cut(query, "#")
		for _, kv := range strings.Split(query, "&") {
			if _, v, ok := strings.Cut(kv, "="); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// neutral is in with every secret replaced by "x": its output is the fixed message text plus the
// echoes of values that are no secret (Secret name, host, path).
func neutral(in credentialsInput) credentialsInput {
	n := in
	for _, s := range secretsOf(in) {
		if s != "" {
			n.server = strings.ReplaceAll(n.server, s, "x")
		}
	}
	if n.password != "" {
		n.password = "x"
	}
	return n
}

// leaks returns the secrets of in that occur in out. A secret counts when it has at least 4 bytes and
// does not occur in the output of the same Secret with the secrets replaced (then it is part of the
// fixed text or of a value that is no secret, and finding it proves nothing).
func leaks(in credentialsInput, out, fixed credentialsOutput) []string {
	fixedText := strings.Join(fixed.texts(), "\n")
	var found []string
	for _, secret := range secretsOf(in) {
		if len(secret) < 4 || strings.Contains(fixedText, secret) {
			continue
		}
		// A log sink quotes values: a secret with a quote or a control character is written escaped.
		escaped := strings.Trim(strconv.Quote(secret), `"`)
		for _, text := range out.texts() {
			if strings.Contains(text, secret) || strings.Contains(text, escaped) {
				found = append(found, secret)
				break
			}
		}
	}
	return found
}

// FuzzPreflightCredentials feeds random server values and Secret contents through the pool's
// credentials path and asserts that no condition message, Event note or log line holds the Secret's
// password, the server value's user info password or a query value of it.
func FuzzPreflightCredentials(f *testing.F) {
	for _, seed := range credentialSeeds {
		f.Add(seed.in.server, seed.in.username, seed.in.password, seed.in.thumbprint, seed.in.caBundle)
	}
	// The Secret is read from a real API server, as the operator reads it (a few ms per input).
	store := newSecretStore(f)
	f.Fuzz(func(t *testing.T, server, username, password, thumbprint, caBundle string) {
		in := credentialsInput{server, username, password, thumbprint, caBundle}
		out := runCredentials(t, in, store)
		if out.err == nil {
			t.Fatalf("a login with a 1 ns deadline succeeded for %q", server)
		}
		if out.condition.Message == "" || len(out.events) != 1 {
			t.Fatalf("a refused Secret must give a condition message and one Event: %+v", out)
		}
		if found := leaks(in, out, runCredentials(t, neutral(in), store)); len(found) > 0 {
			t.Fatalf("secrets %q written:\ncondition: %s\nevents: %q\nlogs: %q", found, out.condition.Message, out.events, out.logs)
		}
	})
}

const seedPW = "p4ss-W0rd!"

var credentialSeeds = []struct {
	in credentialsInput
	// reason and says: the condition's reason and a part of its message naming the problem.
	reason, says string
}{
	{credentialsInput{server: "https://user:" + seedPW + "@vc.example.com", username: "u", password: seedPW},
		afv1.ReasonCredentialsInvalid, "must not carry user info"},
	{credentialsInput{server: "user:" + seedPW + "@vc.example.com:443/sdk", username: "u", password: "other-pass"},
		afv1.ReasonCredentialsInvalid, "must not carry user info"},
	{credentialsInput{server: "https://user:" + seedPW + "@[::1", username: "u", password: seedPW},
		afv1.ReasonCredentialsInvalid, "must not carry user info"},
	{credentialsInput{server: "https://vc.example.com/sdk?token=" + seedPW + "&api_key=abcdef123", username: "u", password: "pw-1234"},
		afv1.ReasonCredentialsInvalid, "query or fragment"},
	{credentialsInput{server: "https://vc.example.com:%zz/" + seedPW, username: "u", password: seedPW},
		afv1.ReasonCredentialsInvalid, "not a valid host name"},
	{credentialsInput{server: "https://vc.example.com/" + seedPW + "#frag", username: "u", password: "pw-1234"},
		afv1.ReasonCredentialsInvalid, "query or fragment"},
	{credentialsInput{server: "http://u:" + seedPW + "@vc", username: "u", password: seedPW},
		afv1.ReasonCredentialsInvalid, "must use https"},
	{credentialsInput{server: "https://vç.例え.jp", username: "u", password: seedPW},
		afv1.ReasonCredentialsInvalid, "neither a DNS name nor an IP address"},
	{credentialsInput{server: "https://" + strings.Repeat("a", 300) + seedPW, username: "u", password: seedPW},
		afv1.ReasonCredentialsInvalid, "neither a DNS name nor an IP address"},
	{credentialsInput{server: " ", username: "u", password: seedPW},
		afv1.ReasonCredentialsInvalid, "lacks keys [server]"},
	{credentialsInput{server: "vc.example.com", username: "u", password: ""},
		afv1.ReasonCredentialsInvalid, "lacks keys [password]"},
	{credentialsInput{server: "vc.example.com", username: "u", password: seedPW, thumbprint: "zz:" + seedPW},
		string(vsphere.ClassInvalid), "thumbprint must be a SHA-256 fingerprint"},
	{credentialsInput{server: "127.0.0.1:8443", username: "u", password: seedPW, caBundle: "-----BEGIN CERTIFICATE-----\n" + seedPW},
		string(vsphere.ClassInvalid), "certificate"},
	{credentialsInput{server: "https://127.0.0.1:8443/sdk", username: "administrator@vsphere.local", password: seedPW},
		"", "127.0.0.1:8443"},
}

// TestPreflightCredentialsSeeds pins the seeds' outcomes, so the fuzz property is not vacuous: each
// refused Secret gives a condition whose message names the problem and one Event, and the leak check
// finds the secret when it is written.
func TestPreflightCredentialsSeeds(t *testing.T) {
	store := newSecretStore(t)
	for _, seed := range credentialSeeds {
		t.Run(seed.in.server, func(t *testing.T) {
			out := runCredentials(t, seed.in, store)
			if out.condition.Status != metav1.ConditionFalse || (seed.reason != "" && out.condition.Reason != seed.reason) {
				t.Errorf("condition %s/%s, want False/%s", out.condition.Status, out.condition.Reason, seed.reason)
			}
			if !strings.Contains(out.condition.Message, seed.says) {
				t.Errorf("condition message %q does not say %q", out.condition.Message, seed.says)
			}
			if len(out.events) != 1 || !strings.Contains(out.events[0], "vCenter not usable") {
				t.Errorf("events %q, want one refusal", out.events)
			}
			if len(out.logs) == 0 || !strings.Contains(strings.Join(out.logs, "\n"), "Reconciler error") {
				t.Errorf("logs %q, want the Reconciler error line", out.logs)
			}
			fixed := runCredentials(t, neutral(seed.in), store)
			if found := leaks(seed.in, out, fixed); len(found) > 0 {
				t.Errorf("secrets %q written: %q", found, out.texts())
			}
			// The check sees a secret once it is written anywhere.
			for i := range 3 {
				leaky := out
				leaky.events = append([]string(nil), out.events...)
				leaky.logs = append([]string(nil), out.logs...)
				switch i {
				case 0:
					leaky.condition.Message += " " + seed.in.password
				case 1:
					leaky.events = append(leaky.events, "Warning x "+seed.in.password)
				case 2:
					leaky.logs = append(leaky.logs, seed.in.password)
				}
				if seed.in.password != "" && len(leaks(seed.in, leaky, fixed)) == 0 {
					t.Errorf("the leak check missed the password written into output %d", i)
				}
			}
		})
	}
}
