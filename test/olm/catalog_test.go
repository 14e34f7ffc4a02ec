package olm

import (
	"testing"
)

const packageName = "agent-forge-operator"

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

// previousCatalogBundle returns the bundle the current version replaces in the default channel.
func previousCatalogBundle(t *testing.T, objs []fbcObject, current string) string {
	t.Helper()
	var defaultChannel string
	for _, o := range objs {
		if o.Schema == "olm.package" {
			defaultChannel = o.DefaultChannel
		}
	}
	for _, o := range objs {
		if o.Schema != "olm.channel" || o.Name != defaultChannel {
			continue
		}
		for _, e := range o.Entries {
			if e.Name == current && e.Replaces != "" {
				return e.Replaces
			}
		}
	}
	t.Fatalf("%s replaces no earlier bundle in the default channel %q", current, defaultChannel)
	return ""
}

// TestCatalogUpgradeGraph checks that both channels end at this bundle, that it upgrades from the previous
// version by replaces and skipRange, and that the catalog's entry for it points at the bundle image.
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
	if pkg == nil || pkg.Name != packageName || pkg.DefaultChannel != "stable" {
		t.Fatalf("want olm.package %s with default channel stable, got %+v", packageName, pkg)
	}
	for _, name := range []string{"alpha", "stable"} {
		ch, ok := channels[name]
		if !ok {
			t.Errorf("channel %s is missing", name)
			continue
		}
		replaced := map[string]bool{}
		for _, e := range ch.Entries {
			replaced[e.Replaces] = true
			if _, ok := bundles[e.Name]; !ok {
				t.Errorf("channel %s lists %s, which has no olm.bundle", name, e.Name)
			}
		}
		var heads []string
		for _, e := range ch.Entries {
			if !replaced[e.Name] {
				heads = append(heads, e.Name)
			}
		}
		if len(heads) != 1 || heads[0] != current {
			t.Errorf("channel %s heads %v, want [%s]", name, heads, current)
		}
		for _, e := range ch.Entries {
			if e.Name == current && (e.Replaces == "" || e.SkipRange == "") {
				t.Errorf("channel %s: %s needs replaces and skipRange to upgrade from older versions", name, current)
			}
		}
	}
	if len(bundles) < 2 {
		t.Errorf("the catalog holds %d bundles; the upgrade graph needs an earlier version", len(bundles))
	}
	if got, want := bundles[current].Image, "quay.io/containeroo/agent-forge-operator-bundle:v"+b.csv.Spec.Version; got != want {
		t.Errorf("catalog image of %s is %q, want %q", current, got, want)
	}
	for name, o := range bundles {
		if o.Image == "" {
			t.Errorf("catalog bundle %s has no image", name)
		}
	}
	_ = previousCatalogBundle(t, objs, current)
}
