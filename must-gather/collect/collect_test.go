package main

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// TestMain lets the test binary stand in for the agent-forge-collect binary the gather script calls,
// so the script runs as shipped without a second build.
func TestMain(m *testing.M) {
	if os.Getenv("AGENT_FORGE_COLLECT_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	isoToken         = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpbmZyYV9lbnZfaWQiOiJkZW1vIn0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
	vcenterPassword  = "vc-Pa55w0rd-do-not-leak"
	proxyPassword    = "proxy-Pa55-do-not-leak"
	operatorNS       = "agent-forge-operator"
	poolNS           = "clusters"
	isoURLWithSecret = "https://assisted-image-service.apps.hub.example/byapikey/" + isoToken + "/4.16/x86_64/minimal.iso?api_key=" + isoToken + "&arch=x86_64"
)

// The gather script, run against a real API server seeded with a pool, its credentials Secret, an
// InfraEnv whose ISO URL carries a token and an event that quotes it, gathers the pool and the
// InfraEnv's status and leaves no Secret value, token or proxy password anywhere in the output, also in
// files another tool (oc adm inspect) put into the collection.
func TestGatherScriptCollectsRedacted(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("the gather script runs under bash, which is not on PATH: %v", err)
	}
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	seed(ctx, t, env.Config)

	base := t.TempDir()
	// What oc adm inspect could have written: a Secret list with data, in the collection.
	inspected := filepath.Join(base, "agent-forge-operator", "inspect", "namespaces", poolNS, "core", "secrets.yaml")
	mustWrite(t, inspected, "apiVersion: v1\nkind: SecretList\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: vsphere-credentials\n  data:\n    password: "+
		base64.StdEncoding.EncodeToString([]byte(vcenterPassword))+"\n  stringData:\n    password: "+vcenterPassword+"\n")

	kubeconfig := writeKubeconfig(t, env.Config)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "must-gather", "gather"))
	cmd.Env = append(os.Environ(), "BASE_COLLECTION_PATH="+base, "AGENT_FORGE_COLLECT="+self, "AGENT_FORGE_COLLECT_AS_MAIN=1",
		"KUBECONFIG="+kubeconfig, "OPERATOR_NAMESPACE="+operatorNS, "STEP_TIMEOUT=120",
		"PATH="+filepath.Dir(mustLookPath(t, "bash"))+":/usr/bin:/bin") // no oc: the inspect step is skipped
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gather: %v\n%s", err, out)
	}
	t.Logf("gather output:\n%s", out)

	got := filepath.Join(base, "agent-forge-operator")
	pool := readFile(t, filepath.Join(got, "namespaces", poolNS, "agent-forge.containeroo.ch", "vsphereagentpools", "workers.yaml"))
	expectContains(t, "pool", pool, "name: workers", "vsphere-credentials")
	infraEnv := readFile(t, filepath.Join(got, "namespaces", poolNS, "agent-install.openshift.io", "infraenvs", "demo.yaml"))
	expectContains(t, "InfraEnv", infraEnv, "https://assisted-image-service.apps.hub.example/byapikey/REDACTED/4.16/x86_64/minimal.iso?REDACTED", "ignitionConfigOverride: REDACTED")
	secret := readFile(t, filepath.Join(got, "namespaces", poolNS, "core", "secrets", "vsphere-credentials.yaml"))
	expectContains(t, "credentials Secret", secret, "- password", "- username")
	events := strings.Join(filesUnder(t, filepath.Join(got, "namespaces", poolNS, "core", "events")), "\n")
	expectContains(t, "events", events, "ISORefreshFailed", "minimal.iso?REDACTED")
	expectContains(t, "errors.txt", readFile(t, filepath.Join(got, "errors.txt")), "no manager pod")
	expectContains(t, "oc adm inspect output", readFile(t, inspected), "password: REDACTED")

	all := strings.Join(filesUnder(t, base), "\n")
	for _, secretText := range []string{isoToken, vcenterPassword, base64.StdEncoding.EncodeToString([]byte(vcenterPassword)), proxyPassword,
		"api_key=", "pull-secret-content"} {
		if strings.Contains(all, secretText) {
			t.Errorf("the collection contains %q", secretText)
		}
	}
}

func seed(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	for _, ns := range []string{poolNS, operatorNS} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	must(t, ignore(kube.CoreV1().Secrets(poolNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vsphere-credentials"},
		StringData: map[string]string{"username": "svc-agent-forge@vsphere.local", "password": vcenterPassword}}, metav1.CreateOptions{})))
	must(t, ignore(kube.CoreV1().ConfigMaps(operatorNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proxy-settings"},
		Data: map[string]string{"HTTPS_PROXY": "http://gatherer:" + proxyPassword + "@proxy.corp.example:3128"}}, metav1.CreateOptions{})))
	pool := obj(t, `
apiVersion: agent-forge.containeroo.ch/v1alpha1
kind: VsphereAgentPool
metadata: {name: workers, namespace: clusters}
spec:
  hostedClusterRef: {name: demo}
  nodePoolRef: {name: demo-workers}
  infraEnvRef: {name: demo}
  controlPlaneNamespace: clusters-demo
  vsphere:
    credentialsSecretRef: {name: vsphere-credentials}
    datacenter: DC0
    datastoreCluster: LocalDS_0
    isoDatastore: LocalDS_0
    network: VM Network
  agent: {role: worker, labels: {agent-forge.example.com/pool: demo-workers}}
`)
	created, err := dyn.Resource(poolsGVR).Namespace(poolNS).Create(ctx, pool, metav1.CreateOptions{})
	must(t, err)
	infraEnv := obj(t, `
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {name: demo, namespace: clusters}
spec:
  pullSecretRef: {name: pull-secret}
  ignitionConfigOverride: '{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/etc/x","contents":{"source":"data:,pull-secret-content"}}]}}'
`)
	ie, err := dyn.Resource(infraEnvsGVR).Namespace(poolNS).Create(ctx, infraEnv, metav1.CreateOptions{})
	must(t, err)
	must(t, unstructured.SetNestedField(ie.Object, isoURLWithSecret, "status", "isoDownloadURL"))
	_, err = dyn.Resource(infraEnvsGVR).Namespace(poolNS).UpdateStatus(ctx, ie, metav1.UpdateOptions{})
	must(t, err)
	// An event quoting the URL (the operator redacts its own; the collection must not rely on that).
	must(t, ignore(kube.CoreV1().Events(poolNS).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "workers.iso"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "agent-forge.containeroo.ch/v1alpha1", Kind: "VsphereAgentPool", Namespace: poolNS, Name: "workers", UID: created.GetUID()},
		Reason:         "ISORefreshFailed", Message: "GET " + isoURLWithSecret + ": 401", Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "agent-forge-operator"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}, metav1.CreateOptions{})))
}

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal([]byte(y), &u.Object))
	return u
}

func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*kc, path))
	return path
}

func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	must(t, filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			out = append(out, readFile(t, path))
		}
		return err
	}))
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte(content), 0o600))
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	must(t, err)
	return p
}

func expectContains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, text)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ignore[T any](_ T, err error) error { return err }
