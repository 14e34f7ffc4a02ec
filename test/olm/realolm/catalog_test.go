//go:build linux

package realolm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// bundleInfo is what the test needs to know of the working tree's bundle.
type bundleInfo struct {
	pkg, channel, csvName string
}

// renderCatalog writes a file-based catalog with one package, one channel and the bundle of the working
// tree (opm render of bundle/) into a new directory. The bundle entry carries no image: OLM then installs
// the objects the entry embeds (olm.bundle.object) and starts no unpack Job, which would need a registry and
// a kubelet (OLM's resolver keeps a registry bundle's objects only when its path, the image, is empty).
func renderCatalog(ctx context.Context, t *testing.T, opm string) (string, bundleInfo) {
	t.Helper()
	entry, info := currentBundle(ctx, t, opm)
	return writeCatalog(ctx, t, opm, info, []any{map[string]any{"name": info.csvName}}, entry), info
}

// currentBundle renders the working tree's bundle/ with opm into an olm.bundle entry without image.
func currentBundle(ctx context.Context, t *testing.T, opm string) (map[string]any, bundleInfo) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	raw, err := os.ReadFile(filepath.Join(root, "bundle", "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatalf("reading the bundle's annotations (make bundle): %v", err)
	}
	if err := yaml.Unmarshal(raw, &ann); err != nil {
		t.Fatal(err)
	}
	info := bundleInfo{
		pkg:     ann.Annotations["operators.operatorframework.io.bundle.package.v1"],
		channel: ann.Annotations["operators.operatorframework.io.bundle.channel.default.v1"],
	}
	if info.pkg == "" || info.channel == "" {
		t.Fatalf("bundle/metadata/annotations.yaml names no package or default channel: %v", ann.Annotations)
	}

	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, opm, "render", filepath.Join(root, "bundle"), "--output", "json")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("opm render bundle/: %v\n%s", err, stderr.String())
	}
	var entry map[string]any
	if err := yaml.Unmarshal(out, &entry); err != nil {
		t.Fatalf("opm render bundle/ printed no single olm.bundle: %v", err)
	}
	if entry["schema"] != "olm.bundle" {
		t.Fatalf("opm render bundle/: schema %v, want olm.bundle", entry["schema"])
	}
	delete(entry, "image")
	info.csvName, _ = entry["name"].(string)
	objects := 0
	props, _ := entry["properties"].([]any)
	for _, p := range props {
		if m, ok := p.(map[string]any); ok && m["type"] == "olm.bundle.object" {
			objects++
		}
	}
	if info.csvName == "" || objects == 0 {
		t.Fatalf("opm render bundle/: bundle %q embeds %d objects", info.csvName, objects)
	}

	return entry, info
}

// writeCatalog writes a file-based catalog of info's package with one channel (entries as given) and the
// bundles, validates it with opm and returns its directory.
func writeCatalog(ctx context.Context, t *testing.T, opm string, info bundleInfo, entries []any, bundles ...map[string]any) string {
	t.Helper()
	docs := []any{
		map[string]any{"schema": "olm.package", "name": info.pkg, "defaultChannel": info.channel},
		map[string]any{"schema": "olm.channel", "package": info.pkg, "name": info.channel, "entries": entries},
	}
	for _, b := range bundles {
		docs = append(docs, b)
	}
	var catalog []string
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		catalog = append(catalog, string(b))
	}
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := os.MkdirAll(filepath.Join(dir, info.pkg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, info.pkg, "catalog.yaml"), []byte(strings.Join(catalog, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, opm, "validate", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("opm validate of the test catalog: %v\n%s", err, out)
	}
	return dir
}

// fixtureBundle reads the olm.bundle entry of a catalog file under test/olm/testdata (a previous release's
// bundle with its objects embedded) and drops its image, as currentBundle does.
func fixtureBundle(t *testing.T, name string) map[string]any {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "test", "olm", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---") {
		var entry map[string]any
		if err := yaml.Unmarshal([]byte(doc), &entry); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if entry["schema"] == "olm.bundle" {
			delete(entry, "image")
			return entry
		}
	}
	t.Fatalf("%s has no olm.bundle entry", name)
	return nil
}
