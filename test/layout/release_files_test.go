package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// TestReleaseFiles: the files a user and a certification review look for are there, and the licence is
// the one the source headers declare.
func TestReleaseFiles(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(b)
	}
	header := read("hack/boilerplate.go.txt")
	license := read("LICENSE")
	if !strings.Contains(header, "Apache License, Version 2.0") || !strings.Contains(license, "Apache License") || !strings.Contains(license, "Version 2.0, January 2004") {
		t.Error("LICENSE is not the Apache License 2.0 that hack/boilerplate.go.txt declares")
	}
	version := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindStringSubmatch(read("Makefile"))
	if version == nil {
		t.Fatal("Makefile: no VERSION")
	}
	if !strings.Contains(read("CHANGELOG.md"), "## "+version[1]) {
		t.Errorf("CHANGELOG.md has no section for VERSION %s", version[1])
	}
	if !strings.Contains(read("SECURITY.md"), "Report") {
		t.Error("SECURITY.md does not say how to report a vulnerability")
	}
}

// TestImageLabels: both images carry the labels OpenShift's certification checks, the licence under
// /licenses, and a version label fed by the Makefile's VERSION.
func TestImageLabels(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Dockerfile", "must-gather/Dockerfile"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		final := string(b)[strings.LastIndex(string(b), "\nFROM "):] // the shipped stage
		for _, label := range []string{"name=", "vendor=", "version=", "release=", "summary=", "description="} {
			if !regexp.MustCompile(`(?m)^\s*(LABEL\s+)?` + regexp.QuoteMeta(label) + `"[^"]+"`).MatchString(final) {
				t.Errorf("%s: the final stage has no %s label", name, strings.TrimSuffix(label, "="))
			}
		}
		if !strings.Contains(final, "COPY LICENSE /licenses/") {
			t.Errorf("%s: the licence is not copied to /licenses", name)
		}
		if !strings.Contains(final, "ARG VERSION") {
			t.Errorf("%s: the version label is not a build argument", name)
		}
	}
}
