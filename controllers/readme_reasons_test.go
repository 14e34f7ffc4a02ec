package controllers

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEListsEveryReason: every condition reason, planned-action reason and Event reason the
// operator can show (a Reason constant, or a literal Event reason) appears in README.md's
// "Troubleshooting by condition reason" table.
func TestREADMEListsEveryReason(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## Troubleshooting by condition reason")
	if start < 0 {
		t.Fatal("README.md has no troubleshooting section")
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	constant := regexp.MustCompile(`Reason[A-Za-z]+\s+=\s+"([A-Za-z]+)"`)
	event := regexp.MustCompile(`Event[f]?\([^,]+, "(?:Warning|Normal)", "([A-Za-z]+)"`)
	batched := regexp.MustCompile(`Recorder\.Batch\([^,]+, "([A-Za-z]+)"`) // the pools' batch Events (Normal)
	reasons := map[string]string{}
	// Every controller package (controllers/ and each subdirectory), the API and the planner.
	dirs := []string{filepath.Join("..", "api", "v1alpha1"), filepath.Join("..", "internal", "planner")}
	if err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 9 {
		t.Fatalf("scanned %d directories: the controllers' subpackages were not found", len(dirs))
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(filepath.Base(f), "zz_") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, re := range []*regexp.Regexp{constant, event, batched} {
				for _, m := range re.FindAllStringSubmatch(string(src), -1) {
					reasons[m[1]] = f
				}
			}
		}
	}
	if len(reasons) < 50 {
		t.Fatalf("found only %d reasons: the scan is broken", len(reasons))
	}
	for reason, file := range reasons {
		if !strings.Contains(section, "`"+reason+"`") {
			t.Errorf("reason %s (%s) is not in README.md's troubleshooting table", reason, file)
		}
	}
}
