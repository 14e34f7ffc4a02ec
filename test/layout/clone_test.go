package layout

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// TestCleanCloneShape fails on what works in a developer's checkout but breaks a clean clone of main
// on a fresh machine, where CI runs: a tracked symlink (a worktree's bin link once made `make test`
// stop in its first second, because the link pointed at a directory only this machine had), anything
// tracked under bin/ (the build cache), and a script make runs that is not executable in git.
func TestCleanCloneShape(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, gitErr := exec.Command("git", "-C", root, "ls-files", "-s").Output()
	if gitErr != nil {
		t.Fatalf("reading the git index (CI runs on a clone of main): %v", gitErr)
	}
	var checked int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("unexpected git ls-files line %q", line)
		}
		mode := strings.Fields(meta)[0]
		checked++
		switch {
		case mode == "120000":
			t.Errorf("%s is a tracked symlink; a clean clone gets a link that may point nowhere", path)
		case path == "bin" || strings.HasPrefix(path, "bin/"):
			t.Errorf("%s is tracked under bin/, the build cache", path)
		case (strings.HasPrefix(path, "hack/") || strings.HasPrefix(path, ".ci/")) &&
			(filepath.Ext(path) == ".sh" || filepath.Base(path) == "run") && mode != "100755":
			t.Errorf("%s has mode %s in git; make runs it, so it must be 100755", path, mode)
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d tracked files; the index read looks wrong", checked)
	}
}
