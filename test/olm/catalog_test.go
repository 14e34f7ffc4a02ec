package olm

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const packageName = "agent-forge-operator"

// upgradeFixtureBundle is the olm.bundle of test/olm/testdata: an older schema for realolm's upgrade test. It was
// never released, so it lives beside the tests and never in catalog/.
const upgradeFixtureBundle = "agent-forge-operator.v0.1.0"

func loadCurrentCatalog(t *testing.T) []fbcObject {
	t.Helper()
	dir, err := repoPath("catalog", packageName)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := loadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestCatalogUpgradeGraph checks the shipped catalog: only bundles of this package that a release built (the
// upgrade fixture never leaks in), channels with distinct meaning (alpha previews, stable releases declared
// stable), a default channel that matches the newest bundle's maturity, a single head per channel that is
// this bundle, upgrade edges that only name bundles of the catalog, and bundle images pointing at the
// release's bundle image.
func TestCatalogUpgradeGraph(t *testing.T) {
	b := loadCurrentBundle(t)
	objs := loadCurrentCatalog(t)
	current := b.csv.Metadata.Name

	var pkg *fbcObject
	channels := map[string]fbcObject{}
	bundles := map[string]fbcObject{}
	for i, o := range objs {
		switch o.Schema {
		case "olm.package":
			pkg = &objs[i]
		case "olm.channel":
			channels[o.Name] = o
		case "olm.bundle":
			bundles[o.Name] = o
		}
	}
	if pkg == nil || pkg.Name != packageName {
		t.Fatalf("want olm.package %s, got %+v", packageName, pkg)
	}
	if _, ok := bundles[upgradeFixtureBundle]; ok {
		t.Errorf("catalog/ holds %s, which was never released (it is the upgrade test fixture)", upgradeFixtureBundle)
	}
	if _, ok := bundles[current]; !ok {
		t.Fatalf("catalog/ has no olm.bundle for %s (run 'make catalog')", current)
	}

	// The default channel follows the maturity of the newest bundle.
	maturity := b.csv.Spec.Maturity
	wantDefault := map[string]string{"alpha": "alpha", "stable": "stable"}[maturity]
	if wantDefault == "" {
		t.Fatalf("CSV spec.maturity %q: want alpha or stable", maturity)
	}
	if pkg.DefaultChannel != wantDefault {
		t.Errorf("default channel %q, want %q for a bundle of maturity %s", pkg.DefaultChannel, wantDefault, maturity)
	}
	for name := range channels {
		if name != "alpha" && name != "stable" {
			t.Errorf("channel %q: only alpha (previews) and stable (releases) are used", name)
		}
	}
	// stable carries only bundles whose CSV says stable.
	if st, ok := channels["stable"]; ok {
		for _, e := range st.Entries {
			if m := bundleMaturity(t, bundles[e.Name]); m != "stable" {
				t.Errorf("stable channel lists %s of maturity %q", e.Name, m)
			}
		}
	}
	if _, ok := channels[pkg.DefaultChannel]; !ok {
		t.Errorf("default channel %s does not exist", pkg.DefaultChannel)
	}

	listed := map[string]bool{}
	for name, ch := range channels {
		replaced := map[string]bool{}
		for _, e := range ch.Entries {
			listed[e.Name] = true
			replaced[e.Replaces] = true
			if _, ok := bundles[e.Name]; !ok {
				t.Errorf("channel %s lists %s, which has no olm.bundle", name, e.Name)
			}
			if e.Replaces != "" {
				if _, ok := bundles[e.Replaces]; !ok {
					t.Errorf("channel %s: %s replaces %s, which the catalog does not hold", name, e.Name, e.Replaces)
				}
			}
		}
		var heads []string
		for _, e := range ch.Entries {
			if !replaced[e.Name] {
				heads = append(heads, e.Name)
			}
		}
		if name == pkg.DefaultChannel && (len(heads) != 1 || heads[0] != current) {
			t.Errorf("default channel %s heads %v, want [%s]", name, heads, current)
		}
	}
	for name, o := range bundles {
		if !listed[name] {
			t.Errorf("catalog bundle %s is in no channel", name)
		}
		if o.Image == "" {
			t.Errorf("catalog bundle %s has no image", name)
		}
	}
	if got, want := bundles[current].Image, "quay.io/containeroo/agent-forge-operator-bundle:v"+b.csv.Spec.Version; got != want && !strings.HasPrefix(got, "quay.io/containeroo/agent-forge-operator-bundle@sha256:") {
		t.Errorf("catalog image of %s is %q, want %q (or the same image by digest)", current, got, want)
	}
}

// TestCatalogRelatedImagesAreNamed: mirroring tools (oc-mirror) and disconnected installs read relatedImages;
// each needs a name, and the operator image must be among them.
func TestCatalogRelatedImagesAreNamed(t *testing.T) {
	b := loadCurrentBundle(t)
	for _, o := range loadCurrentCatalog(t) {
		if o.Schema != "olm.bundle" {
			continue
		}
		if len(o.RelatedImages) == 0 {
			t.Errorf("%s has no relatedImages", o.Name)
		}
		for _, ri := range o.RelatedImages {
			if ri.Name == "" {
				t.Errorf("%s: related image %s has no name", o.Name, ri.Image)
			}
		}
		if o.Name != b.csv.Metadata.Name {
			continue
		}
		found := false
		for _, ri := range o.RelatedImages {
			found = found || ri.Image == b.csv.Metadata.Annotations["containerImage"]
		}
		if !found {
			t.Errorf("%s: the operator image %s is not a related image: %+v", o.Name, b.csv.Metadata.Annotations["containerImage"], o.RelatedImages)
		}
	}
}

// bundleMaturity reads spec.maturity from the CSV an olm.bundle carries (olm.bundle.object or olm.csv.metadata).
func bundleMaturity(t *testing.T, o fbcObject) string {
	t.Helper()
	for _, p := range o.Properties {
		if p.Type != "olm.csv.metadata" {
			continue
		}
		var v struct {
			Maturity string `json:"maturity"`
		}
		if err := json.Unmarshal(p.Value, &v); err != nil {
			t.Fatal(err)
		}
		return v.Maturity
	}
	csv, err := catalogBundleCSV(o)
	if err != nil {
		t.Fatal(err)
	}
	return csv.Spec.Maturity
}

// TestBundleMetadata: the bundle's channels and default channel agree with the catalog, and the OpenShift
// versions it is offered on are declared both as a bundle annotation and as an image label.
func TestBundleMetadata(t *testing.T) {
	path, err := repoPath("bundle", "metadata", "annotations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	ann := meta.Annotations
	var pkg fbcObject
	channels := map[string]bool{}
	for _, o := range loadCurrentCatalog(t) {
		switch o.Schema {
		case "olm.package":
			pkg = o
		case "olm.channel":
			channels[o.Name] = true
		}
	}
	if got := ann["operators.operatorframework.io.bundle.channel.default.v1"]; got != pkg.DefaultChannel {
		t.Errorf("bundle default channel %q, catalog default channel %q", got, pkg.DefaultChannel)
	}
	for _, ch := range strings.Split(ann["operators.operatorframework.io.bundle.channels.v1"], ",") {
		if !channels[ch] {
			t.Errorf("bundle channel %q is not a catalog channel", ch)
		}
	}
	versions := ann["com.redhat.openshift.versions"]
	if !regexp.MustCompile(`^=?v4\.\d+(-v4\.\d+)?$`).MatchString(versions) {
		t.Errorf("com.redhat.openshift.versions %q is not a v4.N range", versions)
	}
	dockerfile, err := repoPath("bundle.Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(df), "LABEL com.redhat.openshift.versions="+versions+"\n") {
		t.Errorf("bundle.Dockerfile lacks LABEL com.redhat.openshift.versions=%s", versions)
	}
}
