package layout

import (
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// grabBagNames are package names that say nothing of what a package holds: such a package collects
// whatever has no home (controllers/shared grew to options, reasons, credentials, Events, fresh reads,
// indexes and per-pool memory before it was dissolved, issue #42). Name a package for its one purpose.
var grabBagNames = map[string]bool{"shared": true, "util": true, "utils": true, "common": true}

// grabBag returns why a package in dir (relative to the repository, slash-separated) with package
// clause pkg has a name that says nothing ("" when its name is fine).
func grabBag(dir, pkg string) string {
	if base := filepath.Base(filepath.FromSlash(dir)); grabBagNames[base] {
		return "package directory " + dir + " is named " + base + ": name it for what it holds"
	}
	if grabBagNames[strings.TrimSuffix(pkg, "_test")] {
		return "package " + pkg + " in " + dir + ": name it for what it holds"
	}
	return ""
}

// TestNoGrabBagPackages walks controllers/ and internal/: no package there is named shared, util,
// utils or common, by its directory or by its package clause.
func TestNoGrabBagPackages(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	packages := map[string]bool{}
	eachGoFile(t, root, func(rel string, src []byte) error {
		f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		dir := path.Dir(rel)
		if why := grabBag(dir, f.Name.Name); why != "" && !packages[dir] {
			t.Error(why)
		}
		packages[dir] = true
		return nil
	})
	if len(packages) < 20 {
		t.Fatalf("found %d packages: the walk missed the tree", len(packages))
	}
	t.Logf("%d packages under controllers/ and internal/", len(packages))
}

// The check itself, on names that break and keep the rule.
func TestGrabBagCheck(t *testing.T) {
	for _, tc := range []struct {
		dir, pkg string
		bad      bool
	}{
		{"controllers/shared", "shared", true},
		{"internal/util", "util", true},
		{"internal/utils", "utils", true},
		{"controllers/pool/common", "common", true},
		{"internal/helpers", "common", true},
		{"internal/events", "events_test", false},
		{"internal/events", "common_test", true},
		{"controllers/config", "config", false},
		{"internal/poolmemory", "poolmemory", false},
		{"internal/sharedlimits", "sharedlimits", false},
	} {
		if got := grabBag(tc.dir, tc.pkg) != ""; got != tc.bad {
			t.Errorf("%s (package %s): grab-bag %t, want %t", tc.dir, tc.pkg, got, tc.bad)
		}
	}
}
