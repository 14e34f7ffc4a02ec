package olm

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// serviceMonitor and prometheusRule are the monitoring.coreos.com/v1 fields these manifests may use; the strict
// decode below fails on any other field (a typo, a file-based field, honorLabels), so a field added to the
// manifests must be added here on purpose.
type serviceMonitor struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Endpoints []struct {
			Path          string `json:"path"`
			Port          string `json:"port"`
			Scheme        string `json:"scheme"`
			Interval      string `json:"interval"`
			Authorization *struct {
				Type        string `json:"type"`
				Credentials *struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"credentials"`
			} `json:"authorization"`
			TLSConfig *struct {
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
// namespace, authenticates with a token from a Secret (never a file on the Prometheus pod, which user-workload
// monitoring refuses), and selects the metrics Service.
func TestServiceMonitorVerifiesTLS(t *testing.T) {
	sm := &serviceMonitor{}
	raw := bundleManifest(t, "agent-forge-operator-controller-manager-metrics-monitor_monitoring.coreos.com_v1_servicemonitor.yaml", sm)
	for _, banned := range []string{"insecureSkipVerify", "bearerTokenFile", "caFile", "certFile", "keyFile", "honorLabels"} {
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

	auth := ep.Authorization
	if auth == nil || auth.Credentials == nil || (auth.Type != "" && auth.Type != "Bearer") {
		t.Fatalf("authorization is not a bearer token from a Secret: %+v", auth)
	}
	secret := map[string]any{}
	bundleManifest(t, auth.Credentials.Name+"_v1_secret.yaml", &secret)
	sa, _ := secret["metadata"].(map[string]any)["annotations"].(map[string]any)["kubernetes.io/service-account.name"].(string)
	if secret["type"] != "kubernetes.io/service-account-token" || auth.Credentials.Key != "token" || sa == "" {
		t.Fatalf("Secret %s is not a service account token (type %v, key %s, account %q)", auth.Credentials.Name, secret["type"], auth.Credentials.Key, sa)
	}
	// The token's account may GET /metrics and nothing else.
	if sa != "default" {
		t.Errorf("the scrape token belongs to %q; only the namespace's default ServiceAccount exists before OLM creates the bundle's objects", sa)
	}
	binding := &rbacv1.ClusterRoleBinding{}
	bundleManifest(t, "agent-forge-operator-metrics-scraper_rbac.authorization.k8s.io_v1_clusterrolebinding.yaml", binding)
	if len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" || binding.Subjects[0].Name != sa || binding.Subjects[0].Namespace != suggestedNamespace {
		t.Errorf("%s binds %+v, want ServiceAccount %s/%s", binding.Name, binding.Subjects, suggestedNamespace, sa)
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

// TestScrapeTokenOutlivesOLMOrdering: OLM creates bundle objects in the catalog's order, which opm sorts by
// apiVersion and kind (a Secret before any ServiceAccount), and the token controller deletes a
// service-account-token Secret whose account does not exist yet. The scrape token therefore names the
// namespace's default ServiceAccount, which exists before OLM creates anything, and no bundle object creates
// an account of that name.
func TestScrapeTokenOutlivesOLMOrdering(t *testing.T) {
	b := loadCurrentBundle(t)
	for _, o := range loadCurrentCatalog(t) {
		if o.Schema != "olm.bundle" || o.Name != b.csv.Metadata.Name {
			continue
		}
		objs, err := bundleObjects(o)
		if err != nil {
			t.Fatal(err)
		}
		tokens := 0
		for _, raw := range objs {
			var obj struct {
				Kind     string `json:"kind"`
				Type     string `json:"type"`
				Metadata struct {
					Name        string            `json:"name"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			switch {
			case obj.Kind == "ServiceAccount" && obj.Metadata.Name == "default":
				t.Error("the bundle creates a ServiceAccount named default")
			case obj.Kind == "Secret" && obj.Type == "kubernetes.io/service-account-token":
				tokens++
				if sa := obj.Metadata.Annotations["kubernetes.io/service-account.name"]; sa != "default" {
					t.Errorf("token Secret %s names ServiceAccount %q, which OLM would create after the Secret", obj.Metadata.Name, sa)
				}
			}
		}
		if tokens != 1 {
			t.Errorf("catalog %s carries %d token Secrets, want 1", o.Name, tokens)
		}
	}
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

// TestAlertsHaveRunbooksAndTests: every alert links a section of docs/runbooks.md that exists, never groups by
// the operator's namespace label for pool metrics, and has a firing and a quiet promtool case
// (config/prometheus/tests, run by `make rules-test`).
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

	testsPath, err := repoPath("config", "prometheus", "tests", "alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(testsPath)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(data, &suite); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
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
		expr := r.Expr
		if strings.Contains(expr, "agent_forge_pool") && regexp.MustCompile(`\bnamespace\b`).MatchString(strings.ReplaceAll(expr, "pool_namespace", "")) {
			t.Errorf("%s groups pool metrics by namespace (the operator's); use pool_namespace: %s", r.Alert, expr)
		}
		if !fires[r.Alert] || !quiet[r.Alert] {
			t.Errorf("%s: promtool tests need a firing case (%v) and a quiet case (%v)", r.Alert, fires[r.Alert], quiet[r.Alert])
		}
	}
}

// githubAnchor is the fragment GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// TestConsoleDashboard: the console dashboard ConfigMap holds valid dashboard JSON whose every query names
// only metrics the operator serves and filters pools by pool_namespace.
func TestConsoleDashboard(t *testing.T) {
	path, err := repoPath("config", "prometheus", "console-dashboard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Metadata.Namespace != "openshift-config-managed" || cm.Metadata.Labels["console.openshift.io/dashboard"] != "true" || len(cm.Data) != 1 {
		t.Fatalf("not a console dashboard ConfigMap: %+v", cm.Metadata)
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
