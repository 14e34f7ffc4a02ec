package controllers

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// troubleshootingDoc holds the table of every reason a user can see (moved out of README.md, which
// now only points to it).
var troubleshootingDoc = filepath.Join("..", "docs", "troubleshooting.md")

// TestTroubleshootingListsEveryReason: every condition reason, planned-action reason and Event reason the
// operator can show (a Reason constant, or a literal Event reason) appears in docs/troubleshooting.md's
// "Troubleshooting by condition reason" table.
func TestTroubleshootingListsEveryReason(t *testing.T) {
	doc, err := os.ReadFile(troubleshootingDoc)
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## Troubleshooting by condition reason\n")
	if start < 0 {
		t.Fatalf("%s has no section \"## Troubleshooting by condition reason\"", troubleshootingDoc)
	}
	section = section[start+1:] // from the heading line
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	if strings.Count(section, "\n| ") < 100 {
		t.Fatalf("the troubleshooting section of %s has %d table rows: the section cut is broken", troubleshootingDoc, strings.Count(section, "\n| "))
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
			t.Errorf("reason %s (%s) is not in the troubleshooting table of %s", reason, file, troubleshootingDoc)
		}
	}
}
