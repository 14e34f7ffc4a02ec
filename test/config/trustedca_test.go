package config

import (
	"bufio"
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

const (
	injectLabel    = "config.openshift.io/inject-trusted-cabundle"
	injectedKey    = "ca-bundle.crt"
	trustMountPath = "/etc/pki/ca-trust/extracted/pem"
	trustFile      = "tls-ca-bundle.pem"
	bundlePrefix   = "agent-forge-operator-"
)

// objects is what one rendering holds: ConfigMaps by name and the manager's pod template.
type objects struct {
	configMaps map[string]corev1.ConfigMap
	pods       map[string]corev1.PodTemplateSpec // by Deployment name
}

func newObjects() objects {
	return objects{configMaps: map[string]corev1.ConfigMap{}, pods: map[string]corev1.PodTemplateSpec{}}
}

// add decodes a multi-document YAML stream; kinds other than ConfigMap, Deployment and
// ClusterServiceVersion (whose install strategy holds the Deployments) are skipped.
func (o objects) add(t *testing.T, name string, data []byte) {
	t.Helper()
	for _, doc := range splitDocs(data) {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch head.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			mustUnmarshal(t, name, doc, &cm)
			o.configMaps[cm.Name] = cm
		case "Deployment":
			var d appsv1.Deployment
			mustUnmarshal(t, name, doc, &d)
			o.pods[d.Name] = d.Spec.Template
		case "ClusterServiceVersion":
			var csv struct {
				Spec struct {
					Install struct {
						Spec struct {
							Deployments []struct {
								Name string                `json:"name"`
								Spec appsv1.DeploymentSpec `json:"spec"`
							} `json:"deployments"`
						} `json:"spec"`
					} `json:"install"`
				} `json:"spec"`
			}
			mustUnmarshal(t, name, doc, &csv)
			for _, d := range csv.Spec.Install.Spec.Deployments {
				o.pods[d.Name] = d.Spec.Template
			}
		}
	}
}

func splitDocs(data []byte) [][]byte {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			return append(docs, data) // let Unmarshal report it
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

func mustUnmarshal(t *testing.T, name string, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		// Strict catches typos in the fields we read; unknown fields elsewhere (CSV) are not ours.
		if err := yaml.Unmarshal(doc, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func repoPath(t *testing.T, elem ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

func readFiles(t *testing.T, o objects, pattern string) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s (%v)", pattern, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		o.add(t, f, b)
	}
}

// checkTrustedCA asserts, for one rendering: the ConfigMap carries the inject label and no data of its
// own, the manager mounts it optionally at trustMountPath with ca-bundle.crt as tls-ca-bundle.pem, and
// passes that file with --trusted-ca-bundle.
func checkTrustedCA(t *testing.T, o objects, configMapName, deploymentName string) {
	t.Helper()
	cm, ok := o.configMaps[configMapName]
	if !ok {
		t.Fatalf("no ConfigMap %s (have %v)", configMapName, keys(o.configMaps))
	}
	if cm.Labels[injectLabel] != "true" {
		t.Errorf("ConfigMap %s lacks label %s=\"true\": %v", cm.Name, injectLabel, cm.Labels)
	}
	if len(cm.Data) != 0 || len(cm.BinaryData) != 0 {
		t.Errorf("ConfigMap %s must ship empty (OpenShift injects the bundle): %v", cm.Name, cm.Data)
	}
	pod, ok := o.pods[deploymentName]
	if !ok {
		t.Fatalf("no Deployment %s (have %v)", deploymentName, keys(o.pods))
	}
	var volume *corev1.Volume
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.ConfigMap != nil && v.ConfigMap.Name == configMapName {
			volume = v
		}
	}
	if volume == nil {
		t.Fatalf("the manager pod mounts no volume of ConfigMap %s", configMapName)
	}
	src := volume.ConfigMap
	if src.Optional == nil || !*src.Optional {
		t.Errorf("volume %s must be optional (the key exists only once OpenShift injected it)", volume.Name)
	}
	if len(src.Items) != 1 || src.Items[0].Key != injectedKey || src.Items[0].Path != trustFile {
		t.Errorf("volume %s must map %s to %s: %+v", volume.Name, injectedKey, trustFile, src.Items)
	}
	var manager *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "manager" {
			manager = &pod.Spec.Containers[i]
		}
	}
	if manager == nil {
		t.Fatal("no manager container")
	}
	i := slices.IndexFunc(manager.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume.Name })
	if i < 0 {
		t.Fatalf("the manager container does not mount volume %s", volume.Name)
	}
	if m := manager.VolumeMounts[i]; m.MountPath != trustMountPath || !m.ReadOnly || m.SubPath != "" {
		// No subPath: a subPath mount never sees a ConfigMap update, and the bundle must follow it.
		t.Errorf("mount of %s: %+v, want read-only %s without subPath", volume.Name, m, trustMountPath)
	}
	want := "--trusted-ca-bundle=" + path.Join(trustMountPath, trustFile)
	if !slices.Contains(manager.Args, want) {
		t.Errorf("manager args %v lack %s", manager.Args, want)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The kustomize input of config/manager.
func TestTrustedCABundleInConfig(t *testing.T) {
	o := newObjects()
	readFiles(t, o, repoPath(t, "config", "manager", "*.yaml"))
	checkTrustedCA(t, o, "trusted-ca-bundle", "controller-manager")
	kust, err := os.ReadFile(repoPath(t, "config", "manager", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kust), "- trusted_ca_bundle.yaml") {
		t.Error("config/manager/kustomization.yaml does not list trusted_ca_bundle.yaml")
	}
}

// What `make deploy` applies: config/default rendered by the pinned kustomize (bin/kustomize, built by
// `make` for bundle and bundle-verify, which make test runs before the tests).
func TestTrustedCABundleInKustomizeOutput(t *testing.T) {
	kustomize := repoPath(t, "bin", "kustomize")
	if _, err := os.Stat(kustomize); err != nil {
		t.Fatalf("bin/kustomize not built (make test builds it for bundle-verify; alone: make bin/kustomize): %v", err)
	}
	out, err := exec.CommandContext(t.Context(), kustomize, "build", repoPath(t, "config", "default")).Output()
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	o := newObjects()
	o.add(t, "kustomize build config/default", out)
	checkTrustedCA(t, o, bundlePrefix+"trusted-ca-bundle", bundlePrefix+"controller-manager")
}

// What OLM installs: the bundle ships the ConfigMap and the CSV's Deployment mounts it.
func TestTrustedCABundleInOLMBundle(t *testing.T) {
	o := newObjects()
	readFiles(t, o, repoPath(t, "bundle", "manifests", "*.yaml"))
	checkTrustedCA(t, o, bundlePrefix+"trusted-ca-bundle", bundlePrefix+"controller-manager")
}

// The manager's --trusted-ca-bundle default is the file the manifests mount, so a Deployment without
// the flag still finds it.
func TestTrustedCABundleFlagDefault(t *testing.T) {
	file := repoPath(t, "cmd", "main.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "defaultTrustedCABundle" && len(vs.Values) == 1 {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				got, _ = strconv.Unquote(lit.Value)
			}
		}
		return true
	})
	if want := path.Join(trustMountPath, trustFile); got != want {
		t.Fatalf("cmd/main.go defaultTrustedCABundle = %q, want %q", got, want)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"trusted-ca-bundle"`, `"AGENT_FORGE_TRUSTED_CA_BUNDLE"`} {
		if !bytes.Contains(src, []byte(s)) {
			t.Errorf("cmd/main.go does not define %s", s)
		}
	}
}
