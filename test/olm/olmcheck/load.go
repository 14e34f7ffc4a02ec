package olmcheck

import (
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// Testdata is the path of a file under test/olm/testdata (the upstream fixtures and old CRDs).
func Testdata(t T, elem ...string) string {
	t.Helper()
	return repoPath(t, append([]string{"test", "olm", "testdata"}, elem...)...)
}

// BundleCRDs are this project's CRDs as the OLM bundle ships them (bundle/manifests): what OLM applies.
func BundleCRDs(t T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return crdsIn(t, repoPath(t, "bundle", "manifests"))
}

// BaseCRDs are this project's CRDs as config/crd/bases holds them: what envtest installs.
func BaseCRDs(t T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return crdsIn(t, repoPath(t, "config", "crd", "bases"))
}

// crdsIn reads every CustomResourceDefinition among dir's YAML files (other kinds are skipped).
func crdsIn(t T, dir string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			var meta struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if meta.Kind != "CustomResourceDefinition" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(doc, crd); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[crd.Name] = crd
		}
	}
	if len(out) == 0 {
		t.Fatalf("no CustomResourceDefinition in %s", dir)
	}
	return out
}

// LoadCRDs reads the CustomResourceDefinitions of a multi-document YAML file, by name.
func LoadCRDs(t T, path string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, doc := range yamlDocs(t, path) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			t.Fatalf("%s: unexpected kind %q", path, crd.Kind)
		}
		out[crd.Name] = crd
	}
	return out
}

// LoadObjects reads the objects of a multi-document YAML file.
func LoadObjects(t T, path string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range yamlDocs(t, path) {
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil { // integers as int64, as the API server returns them
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, obj)
	}
	return out
}

func repoPath(t T, elem ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

func yamlDocs(t T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var docs [][]byte
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(stripComments(doc)) != "" {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

func stripComments(doc string) string {
	var keep []string
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
