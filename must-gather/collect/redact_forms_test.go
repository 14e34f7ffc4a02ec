package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kevents "k8s.io/client-go/tools/events"

	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/redact"
)

// secretForms is every form of secret the product may quote, each with the part that must never be
// written. (This test lives in must-gather's package because that is the one output path that cannot be
// imported; the others are reached from here.)
var secretForms = []struct{ form, text, secret string }{
	{"URL user info password", `Post "https://admin:hunter2pw@vc.example.com/sdk": EOF`, "hunter2pw"},
	{"URL user info token", "clone https://ghp_tok3n123x@git.example.com/x failed", "ghp_tok3n123x"},
	{"api_key query", "GET https://ais.example.com/images/x?api_key=sekr1tkey9&arch=x86_64: 401", "sekr1tkey9"},
	{"token query", "GET https://ais.example.com/x?token=tok3nvalue9 failed", "tok3nvalue9"},
	{"client_secret query", "POST https://sso.example.com/token?client_id=op&client_secret=cl13ntsecret9", "cl13ntsecret9"},
	{"password query", "https://h.example.com/x?user=a&password=pa55query9", "pa55query9"},
	{"pre-signed URL signature", "https://b.s3.amazonaws.com/r.iso?X-Amz-Signature=51gnature9abc&X-Amz-Date=1", "51gnature9abc"},
	{"URL fragment token", "https://console.example.com/cb#access_token=fr4gtoken9", "fr4gtoken9"},
	{"token path segment", "GET https://ais.example.com/byapikey/p4thtoken9/4.16/x86_64/minimal.iso: 403", "p4thtoken9"},
	{"client_secret pair", "oauth: client_secret=cl13ntpair9 rejected", "cl13ntpair9"},
	{"password pair", "login failed: user=admin password=pa55pair9", "pa55pair9"},
	{"JSON password", `{"username":"admin","password":"pa55json9"}`, "pa55json9"},
	{"YAML token", "token: y4mltoken9\n", "y4mltoken9"},
	{"Authorization Bearer", "Authorization: Bearer b3arer.token9", "b3arer.token9"},
	{"Authorization Basic", "Authorization: Basic dXNlcjpzM2NyM3Q5", "dXNlcjpzM2NyM3Q5"},
	{"JWT", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl9 expired", "c2lnbmF0dXJl9"},
	{"PEM private key", "key: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIPr1vateKey9\n-----END EC PRIVATE KEY-----", "MHcCAQEEIPr1vateKey9"},
}

// TestEverySecretFormThroughEveryOutput runs each secret form through every path the product writes
// text to, all of which use the one engine (internal/redact): a condition message (also what status
// fields such as a failure domain's message hold), an Event note, a log line (the manager's logger),
// must-gather's text scrub and its file redaction, and, for URL forms, the URL shown in status.iso.url
// (redact.URLPath) and an endpoint label (redact.HostOf; metric labels hold no free text).
func TestEverySecretFormThroughEveryOutput(t *testing.T) {
	dir := t.TempDir()
	for _, sf := range secretForms {
		t.Run(sf.form, func(t *testing.T) {
			outputs := map[string]string{}

			var conds []metav1.Condition
			conditions.SetCondition(&conds, "VSphereReachable", false, "Test", "login failed: "+sf.text, 1)
			outputs["condition"] = conds[0].Message
			outputs["status field"] = redact.String(sf.text)

			rec := kevents.NewFakeRecorder(2)
			events.NewRecorder(rec).Eventf(&corev1.ObjectReference{Kind: "VsphereAgentPool", Namespace: "ns", Name: "p"}, nil,
				"Warning", "Test", "Test", "refused: %s", sf.text)
			outputs["event"] = <-rec.Events

			var logged []string
			log := redact.Logger(funcr.New(func(prefix, args string) { logged = append(logged, prefix+" "+args) }, funcr.Options{}))
			log.Error(errors.New(sf.text), "request failed: "+sf.text, "detail", sf.text)
			log.WithValues("request", sf.text).Info("retrying " + sf.text)
			outputs["log"] = strings.Join(logged, "\n")

			outputs["must-gather text"] = scrubText(sf.text)
			file := filepath.Join(dir, strings.ReplaceAll(sf.form, " ", "-")+".log")
			if err := os.WriteFile(file, []byte(sf.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := redactTree(dir); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			outputs["must-gather file"] = string(b)

			if i := strings.Index(sf.text, "://"); i >= 0 {
				u := sf.text[strings.LastIndexAny(sf.text[:i], " \"")+1:]
				u = strings.Fields(strings.TrimRight(u, `":`))[0]
				outputs["status URL"] = redact.URLPath(u)
				outputs["endpoint label"] = redact.HostOf(u)
			}

			for path, out := range outputs {
				if strings.Contains(out, sf.secret) {
					t.Errorf("%s leaks %q: %q", path, sf.secret, out)
				}
			}
			if !strings.Contains(outputs["event"], redact.Mask) && outputs["status URL"] == "" {
				t.Errorf("event %q shows no mask: the form was not recognised", outputs["event"])
			}
		})
	}
}
