package olm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/internal/dashboard"
)

// serviceMonitor and prometheusRule are the monitoring.coreos.com/v1 fields these manifests may use; the strict
// decode below fails on any other field (a typo, another file-based field, honorLabels, an authorization
// from a Secret), so a field added to the manifests must be added here on purpose.
type serviceMonitor struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Endpoints []struct {
			Path            string `json:"path"`
			Port            string `json:"port"`
			Scheme          string `json:"scheme"`
			Interval        string `json:"interval"`
			BearerTokenFile string `json:"bearerTokenFile"`
			TLSConfig       *struct {
				CA struct {
					ConfigMap *struct {
						Name string `json:"name"`
						Key  string `json:"key"`
					} `json:"configMap"`
				} `json:"ca"`
				ServerName string `json:"serverName"`
			} `json:"tlsConfig"`
		} `json:"endpoints"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
	} `json:"spec"`
}

type promRule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type prometheusRule struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Groups []struct {
			Name  string     `json:"name"`
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

const (
	suggestedNamespace = "agent-forge-operator"
	metricsService     = "agent-forge-operator-controller-manager-metrics-service"
)

// bundleManifest reads bundle/manifests/<name> strictly into out: a field the type does not know (a typo, or a
// field of another API version) fails the test, as the API server would drop it.
func bundleManifest(t *testing.T, name string, out any) []byte {
	t.Helper()
	path, err := repoPath("bundle", "manifests", name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run 'make bundle'): %v", name, err)
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return data
}

// TestServiceMonitorVerifiesTLS: the shipped ServiceMonitor works on a default OpenShift install from
// OperatorHub. It verifies the service-ca certificate for the name the Service gets in the suggested
// namespace (so Prometheus sends its token to our endpoint only), authenticates with platform Prometheus's
// own ServiceAccount token (the only file it references), which the bundle allows GET /metrics and nothing
// else, and selects the metrics Service.
func TestServiceMonitorVerifiesTLS(t *testing.T) {
	sm := &serviceMonitor{}
	raw := bundleManifest(t, "agent-forge-operator-controller-manager-metrics-monitor_monitoring.coreos.com_v1_servicemonitor.yaml", sm)
	for _, banned := range []string{"insecureSkipVerify", "caFile", "certFile", "keyFile", "honorLabels", "authorization", "bearerTokenSecret"} {
		if bytes.Contains(raw, []byte(banned)) {
			t.Errorf("ServiceMonitor uses %s", banned)
		}
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("want one endpoint, got %d", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if sm.APIVersion != "monitoring.coreos.com/v1" || sm.Kind != "ServiceMonitor" {
		t.Errorf("not a monitoring.coreos.com/v1 ServiceMonitor: %s %s", sm.APIVersion, sm.Kind)
	}
	if ep.Scheme != "https" || ep.Port != "https" || ep.Path != "/metrics" {
		t.Errorf("endpoint is not https://:https/metrics: %+v", ep)
	}
	tls := ep.TLSConfig
	if tls == nil || tls.CA.ConfigMap == nil {
		t.Fatalf("tlsConfig.ca is not a ConfigMap reference: %+v", tls)
	}
	if want := metricsService + "." + suggestedNamespace + ".svc"; tls.ServerName != want {
		t.Errorf("tlsConfig.serverName %q, want %s (the service-ca certificate's name in the suggested namespace)", tls.ServerName, want)
	}
	cm := map[string]any{}
	bundleManifest(t, tls.CA.ConfigMap.Name+"_v1_configmap.yaml", &cm)
	if ann, _ := cm["metadata"].(map[string]any)["annotations"].(map[string]any); ann["service.beta.openshift.io/inject-cabundle"] != "true" || tls.CA.ConfigMap.Key != "service-ca.crt" {
		t.Errorf("CA ConfigMap %s is not filled by service-ca (annotation %v, key %s)", tls.CA.ConfigMap.Name, ann, tls.CA.ConfigMap.Key)
	}

	// Prometheus's own token: the projected ServiceAccount token of its pod.
	if ep.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("bearerTokenFile %q, want the scraping Prometheus's own ServiceAccount token", ep.BearerTokenFile)
	}
	binding := &rbacv1.ClusterRoleBinding{}
	bundleManifest(t, "agent-forge-operator-metrics-scraper_rbac.authorization.k8s.io_v1_clusterrolebinding.yaml", binding)
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "openshift-monitoring"}
	if len(binding.Subjects) != 1 || binding.Subjects[0] != want || binding.RoleRef.Kind != "ClusterRole" {
		t.Errorf("%s binds %+v to %+v, want the ClusterRole bound to %+v", binding.Name, binding.Subjects, binding.RoleRef, want)
	}
	role := &rbacv1.ClusterRole{}
	bundleManifest(t, binding.RoleRef.Name+"_rbac.authorization.k8s.io_v1_clusterrole.yaml", role)
	if len(role.Rules) != 1 || strings.Join(role.Rules[0].NonResourceURLs, ",") != "/metrics" || strings.Join(role.Rules[0].Verbs, ",") != "get" || len(role.Rules[0].Resources) > 0 {
		t.Errorf("the scraper may do more than GET /metrics: %+v", role.Rules)
	}

	// The Service it selects is the metrics Service, whose certificate service-ca issues.
	svc := map[string]any{}
	bundleManifest(t, metricsService+"_v1_service.yaml", &svc)
	md := svc["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	for k, v := range sm.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, the metrics Service has %v", k, v, labels[k])
		}
	}
	if ann, _ := md["annotations"].(map[string]any); ann["service.beta.openshift.io/serving-cert-secret-name"] == nil {
		t.Error("the metrics Service does not ask service-ca for a serving certificate")
	}
}

// bundledObject is what TestNoLegacyTokenNorDefaultAccount reads of any bundle object.
type bundledObject struct {
	Kind     string `json:"kind"`
	Type     string `json:"type"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Subjects []rbacv1.Subject `json:"subjects"`
	Spec     struct {
		Install struct {
			Spec struct {
				ClusterPermissions []struct {
					ServiceAccountName string `json:"serviceAccountName"`
				} `json:"clusterPermissions"`
				Permissions []struct {
					ServiceAccountName string `json:"serviceAccountName"`
				} `json:"permissions"`
				Deployments []struct {
					Spec struct {
						Template struct {
							Spec struct {
								ServiceAccountName string `json:"serviceAccountName"`
							} `json:"spec"`
						} `json:"template"`
					} `json:"spec"`
				} `json:"deployments"`
			} `json:"spec"`
		} `json:"install"`
	} `json:"spec"`
}

// legacyIdentities lists what the bundle must not carry: a long-lived token Secret
// (kubernetes.io/service-account-token) or any grant to, or use of, a namespace's `default` ServiceAccount.
func legacyIdentities(o bundledObject) []string {
	var bad []string
	where := o.Kind + " " + o.Metadata.Name
	if o.Kind == "Secret" && o.Type == "kubernetes.io/service-account-token" {
		bad = append(bad, where+": a legacy ServiceAccount token Secret")
	}
	if o.Kind == "ServiceAccount" && o.Metadata.Name == "default" {
		bad = append(bad, where+": creates a ServiceAccount named default")
	}
	for _, s := range o.Subjects {
		if s.Kind == "ServiceAccount" && s.Name == "default" {
			bad = append(bad, fmt.Sprintf("%s: binds the default ServiceAccount of %q", where, s.Namespace))
		}
	}
	install := o.Spec.Install.Spec
	var accounts []string
	for _, p := range install.ClusterPermissions {
		accounts = append(accounts, p.ServiceAccountName)
	}
	for _, p := range install.Permissions {
		accounts = append(accounts, p.ServiceAccountName)
	}
	for _, d := range install.Deployments {
		accounts = append(accounts, d.Spec.Template.Spec.ServiceAccountName)
	}
	for _, a := range accounts {
		if a == "default" || (a == "" && o.Kind == "ClusterServiceVersion") {
			bad = append(bad, where+": grants to or runs as the default ServiceAccount")
		}
	}
	return bad
}

// TestNoLegacyTokenNorDefaultAccount: the scrape identity is platform Prometheus's own account, so nothing
// in the bundle (its manifests, and the same objects as the catalog serves them) is a legacy token Secret
// or names a `default` ServiceAccount.
func TestNoLegacyTokenNorDefaultAccount(t *testing.T) {
	t.Run("rule", func(t *testing.T) {
		// The check itself: each of these objects is refused.
		for _, doc := range []string{
			`{"kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":"t"}}`,
			`{"kind":"ClusterRoleBinding","metadata":{"name":"b"},"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"x"}]}`,
			`{"kind":"ServiceAccount","metadata":{"name":"default"}}`,
			`{"kind":"ClusterServiceVersion","metadata":{"name":"c"},"spec":{"install":{"spec":{"deployments":[{"spec":{"template":{"spec":{}}}}]}}}}`,
		} {
			var o bundledObject
			if err := json.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatal(err)
			}
			if len(legacyIdentities(o)) == 0 {
				t.Errorf("not refused: %s", doc)
			}
		}
	})
	t.Run("bundle manifests", func(t *testing.T) {
		dir, err := repoPath("bundle", "manifests")
		if err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			var o bundledObject
			if err := yaml.Unmarshal(data, &o); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			for _, bad := range legacyIdentities(o) {
				t.Errorf("%s: %s", e.Name(), bad)
			}
		}
	})
	t.Run("catalog", func(t *testing.T) {
		b := loadCurrentBundle(t)
		found := false
		for _, o := range loadCurrentCatalog(t) {
			if o.Schema != "olm.bundle" || o.Name != b.csv.Metadata.Name {
				continue
			}
			found = true
			objs, err := bundleObjects(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range objs {
				var obj bundledObject
				if err := json.Unmarshal(raw, &obj); err != nil {
					t.Fatal(err)
				}
				for _, bad := range legacyIdentities(obj) {
					t.Errorf("catalog %s: %s", o.Name, bad)
				}
			}
		}
		if !found {
			t.Fatalf("the catalog has no bundle %s", b.csv.Metadata.Name)
		}
	})
}

// TestPrometheusK8sMayDiscoverTheService: platform Prometheus (openshift-monitoring/prometheus-k8s) needs to
// list the Service, Endpoints/EndpointSlices and Pods in the operator's namespace.
func TestPrometheusK8sMayDiscoverTheService(t *testing.T) {
	rb := &rbacv1.RoleBinding{}
	bundleManifest(t, "agent-forge-operator-prometheus-k8s_rbac.authorization.k8s.io_v1_rolebinding.yaml", rb)
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != "prometheus-k8s" || rb.Subjects[0].Namespace != "openshift-monitoring" || rb.RoleRef.Kind != "Role" {
		t.Fatalf("RoleBinding %s: %+v -> %+v", rb.Name, rb.Subjects, rb.RoleRef)
	}
	role := &rbacv1.Role{}
	bundleManifest(t, rb.RoleRef.Name+"_rbac.authorization.k8s.io_v1_role.yaml", role)
	granted := map[string]bool{}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			if strings.Join(r.Verbs, ",") == "get,list,watch" {
				granted[res] = true
			}
		}
	}
	for _, res := range []string{"services", "endpoints", "endpointslices", "pods"} {
		if !granted[res] {
			t.Errorf("prometheus-k8s may not get/list/watch %s", res)
		}
	}
}

// TestCSVAsksForClusterMonitoring: the console creates the suggested namespace with the cluster-monitoring
// label (from the namespace template), so platform Prometheus picks up the ServiceMonitor and rules.
func TestCSVAsksForClusterMonitoring(t *testing.T) {
	b := loadCurrentBundle(t)
	ann := b.csv.Metadata.Annotations
	if ann["operatorframework.io/cluster-monitoring"] != "true" {
		t.Error(`CSV lacks operatorframework.io/cluster-monitoring: "true"`)
	}
	if ann["operatorframework.io/suggested-namespace"] != suggestedNamespace {
		t.Errorf("suggested namespace %q, want %s", ann["operatorframework.io/suggested-namespace"], suggestedNamespace)
	}
	var ns struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(ann["operatorframework.io/suggested-namespace-template"]), &ns); err != nil {
		t.Fatalf("suggested-namespace-template is not a JSON Namespace: %v", err)
	}
	if ns.Kind != "Namespace" || ns.APIVersion != "v1" || ns.Metadata.Name != suggestedNamespace || ns.Metadata.Labels["openshift.io/cluster-monitoring"] != "true" {
		t.Errorf("suggested-namespace-template %+v: want Namespace %s labelled openshift.io/cluster-monitoring=true", ns, suggestedNamespace)
	}
	// features.operators.openshift.io/disconnected is checked against the images' digests in images_test.go.
}

// promRules is the PrometheusRule shipped in the bundle.
func promRules(t *testing.T) []promRule {
	t.Helper()
	pr := &prometheusRule{}
	bundleManifest(t, "agent-forge-operator-alerts_monitoring.coreos.com_v1_prometheusrule.yaml", pr)
	var out []promRule
	for _, g := range pr.Spec.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatal("the PrometheusRule has no rules")
	}
	return out
}

// TestAlertsHaveRunbooksAndTests: every alert links a section of docs/runbooks.md that exists, keeps the
// labels Alertmanager routes by in every aggregation (namespace; for pool metrics pool_namespace and pool
// too), and has a firing and a quiet promtool case (config/prometheus/tests, run by `make rules-test`) whose
// expected alerts carry those labels.
func TestAlertsHaveRunbooksAndTests(t *testing.T) {
	runbooksPath, err := repoPath("docs", "runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	runbooks, err := os.ReadFile(runbooksPath)
	if err != nil {
		t.Fatalf("docs/runbooks.md: %v", err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^##+ (.+)$`).FindAllStringSubmatch(string(runbooks), -1) {
		anchors[githubAnchor(m[1])] = true
	}

	// Every promtool file of our rules (upstream_*.yaml test upstream's rewritten alerts instead).
	testsDir, err := repoPath("config", "prometheus", "tests")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(testsDir, "*_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type promtoolSuite struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []struct {
					ExpLabels map[string]string `json:"exp_labels"`
				} `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	var suite promtoolSuite
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "upstream_") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var one promtoolSuite
		if err := yaml.Unmarshal(data, &one); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		suite.Tests = append(suite.Tests, one.Tests...)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	expLabels := map[string][]map[string]string{}
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
			for _, e := range a.ExpAlerts {
				expLabels[a.Alertname] = append(expLabels[a.Alertname], e.ExpLabels)
			}
		}
	}

	const prefix = "https://github.com/containeroo/agent-forge-operator/blob/main/docs/runbooks.md#"
	for _, r := range promRules(t) {
		if r.Alert == "" {
			continue
		}
		url := r.Annotations["runbook_url"]
		if !strings.HasPrefix(url, prefix) || !anchors[strings.TrimPrefix(url, prefix)] {
			t.Errorf("%s: runbook_url %q names no section of docs/runbooks.md", r.Alert, url)
		}
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: needs a severity label, a summary and a description", r.Alert)
		}
		pool := strings.Contains(r.Expr, "agent_forge_pool")
		for _, problem := range aggregationsDropping(r.Expr) {
			t.Errorf("%s: %s", r.Alert, problem)
		}
		for _, labels := range expLabels[r.Alert] {
			// absent() can name no namespace: only an alert built on it may lack one, and then names the job.
			if labels["namespace"] == "" && (!strings.Contains(r.Expr, "absent(") || labels["job"] == "") {
				t.Errorf("%s: a promtool case expects the alert without a namespace label: %v", r.Alert, labels)
			}
			if pool && (labels["pool_namespace"] == "" || labels["pool"] == "") {
				t.Errorf("%s: a promtool case expects the alert without pool_namespace and pool: %v", r.Alert, labels)
			}
		}
		if !fires[r.Alert] || !quiet[r.Alert] {
			t.Errorf("%s: promtool tests need a firing case (%v) and a quiet case (%v)", r.Alert, fires[r.Alert], quiet[r.Alert])
		}
	}
}

// aggregationRE finds PromQL aggregations and their optional `by (...)` clause, written before the argument
// (the house style: a trailing clause is reported as dropping labels; `without`, which keeps them, is not
// used by the rules and not matched).
var aggregationRE = regexp.MustCompile(`\b(sum|min|max|avg|count|group|stddev|stdvar|topk|bottomk|quantile|count_values)\s*(by\s*\(([^)]*)\))?\s*\(`)

// aggregationsDropping lists the aggregations in expr whose `by` clause lacks namespace, or, when their
// argument reads a per-pool metric, pool_namespace or pool.
func aggregationsDropping(expr string) []string {
	var problems []string
	for _, m := range aggregationRE.FindAllStringSubmatchIndex(expr, -1) {
		head := strings.TrimSpace(expr[m[0]:m[1]])
		var by []string
		if m[6] >= 0 {
			for _, l := range strings.Split(expr[m[6]:m[7]], ",") {
				by = append(by, strings.TrimSpace(l))
			}
		}
		// The argument runs to the parenthesis that closes the one the match ends with.
		depth, end := 1, m[1]
		for ; end < len(expr) && depth > 0; end++ {
			switch expr[end] {
			case '(':
				depth++
			case ')':
				depth--
			}
		}
		want := []string{"namespace"}
		if strings.Contains(expr[m[1]:end], "agent_forge_pool") {
			want = append(want, "pool_namespace", "pool")
		}
		for _, w := range want {
			if !slices.Contains(by, w) {
				problems = append(problems, fmt.Sprintf("%q drops %s", head, w))
			}
		}
	}
	return problems
}

// TestAggregationCheck: the check above catches an aggregation without the labels, and passes one with them.
func TestAggregationCheck(t *testing.T) {
	for expr, want := range map[string]int{
		`max(agent_forge_external_crds_missing) > 0`:                             1,
		`sum by (operation) (rate(x[5m]))`:                                       1,
		`max by (namespace) (x) > 0`:                                             0,
		`max by (namespace) (agent_forge_pool_waiting_agentmachines)`:            2,
		`max by (pool_namespace, pool) (agent_forge_pool_waiting_agentmachines)`: 1,
		`max by (namespace, pool_namespace, pool) (agent_forge_pool_x) unless on (namespace) sum by (namespace) (rate(z[5m]))`: 0,
		`histogram_quantile(0.9, sum by (le) (rate(x[5m])))`:                                                                   1,
	} {
		if got := len(aggregationsDropping(expr)); got != want {
			t.Errorf("%s: %d problems, want %d: %v", expr, got, want, aggregationsDropping(expr))
		}
	}
}

// githubAnchor is the fragment GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// TestConsoleDashboard: the dashboard the manager installs (internal/dashboard) is a ConfigMap the console
// reads, owned by a ClusterRole the bundle ships (so uninstalling removes it), and holds valid dashboard
// JSON whose every query names only metrics the operator serves and filters pools by pool_namespace.
func TestConsoleDashboard(t *testing.T) {
	owner := &rbacv1.ClusterRole{}
	bundleManifest(t, dashboard.OwnerClusterRole+"_rbac.authorization.k8s.io_v1_clusterrole.yaml", owner)
	if owner.Name != dashboard.OwnerClusterRole {
		t.Errorf("the bundle's ClusterRole is %q, the dashboard's owner %q", owner.Name, dashboard.OwnerClusterRole)
	}
	cm := dashboard.Desired(owner)
	if *cm.Namespace != "openshift-config-managed" || cm.Labels["console.openshift.io/dashboard"] != "true" || len(cm.Data) != 1 {
		t.Fatalf("not a console dashboard ConfigMap: %s/%s %v", *cm.Namespace, *cm.Name, cm.Labels)
	}
	if len(cm.OwnerReferences) != 1 || *cm.OwnerReferences[0].Kind != "ClusterRole" || *cm.OwnerReferences[0].Name != dashboard.OwnerClusterRole {
		t.Errorf("owner references %+v, want the ClusterRole %s", cm.OwnerReferences, dashboard.OwnerClusterRole)
	}
	known := map[string]bool{}
	for _, m := range []string{"agent_forge_pool_capacity", "agent_forge_pool_waiting_agentmachines", "agent_forge_pool_vm_requests_total", "agent_forge_pool_headroom_vms",
		"agent_forge_vm_resources", "agent_forge_vsphere_vm_operations_total", "agent_forge_vsphere_call_duration_seconds_bucket",
		"agent_forge_iso_operations_total", "agent_forge_iso_bytes_transferred_total", "agent_forge_reconcile_duration_seconds_bucket",
		"agent_forge_external_crds_missing"} {
		known[m] = true
	}
	for name, body := range cm.Data {
		var dash struct {
			Title string `json:"title"`
			Rows  []struct {
				Panels []struct {
					Title   string `json:"title"`
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
			} `json:"rows"`
		}
		if err := json.Unmarshal([]byte(body), &dash); err != nil {
			t.Fatalf("%s is not JSON: %v", name, err)
		}
		queries := 0
		for _, r := range dash.Rows {
			for _, p := range r.Panels {
				for _, tg := range p.Targets {
					queries++
					for _, m := range regexp.MustCompile(`agent_forge_[a-z_]+`).FindAllString(tg.Expr, -1) {
						if !known[m] {
							t.Errorf("panel %q queries %s, which the operator does not serve", p.Title, m)
						}
					}
					if strings.Contains(tg.Expr, "agent_forge_pool") && !strings.Contains(tg.Expr, "pool_namespace") {
						t.Errorf("panel %q does not filter pools by pool_namespace: %s", p.Title, tg.Expr)
					}
				}
			}
		}
		if queries < 8 {
			t.Errorf("%s: only %d queries", name, queries)
		}
	}
}
