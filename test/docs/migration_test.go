package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMigrationGuide: docs/migration.md shows exactly the replacement PrometheusRule that promtool tests
// (config/prometheus/upstream/replacement-rules.yaml, without its comments), keeps the heading the
// adoption work fills in, and every relative link names a file and heading that exist.
func TestMigrationGuide(t *testing.T) {
	guide := readRepoFile(t, "docs", "migration.md")

	rules := readRepoFile(t, "config", "prometheus", "upstream", "replacement-rules.yaml")
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(rules), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			want = append(want, line)
		}
	}
	block := regexp.MustCompile("(?s)```yaml\n(apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\n.*?)```").FindStringSubmatch(guide)
	if block == nil {
		t.Fatal("docs/migration.md shows no PrometheusRule")
	}
	if got := strings.TrimSpace(block[1]); got != strings.Join(want, "\n") {
		t.Errorf("the PrometheusRule in docs/migration.md differs from config/prometheus/upstream/replacement-rules.yaml (tested by make rules-test):\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	if !regexp.MustCompile(`(?m)^## Adopt upstream VMs$`).MatchString(guide) {
		t.Error(`docs/migration.md lost the heading "## Adopt upstream VMs"`)
	}

	links := regexp.MustCompile(`\]\(([^)#\s]*)(?:#([^)\s]+))?\)`).FindAllStringSubmatch(guide, -1)
	if len(links) < 5 {
		t.Fatalf("found %d links: the scan is broken", len(links))
	}
	for _, l := range links {
		file, anchor := l[1], l[2]
		if strings.Contains(file, "://") {
			continue
		}
		target := guide
		if file != "" {
			target = readRepoFile(t, "docs", file)
		}
		if anchor != "" && !hasHeading(target, anchor) {
			t.Errorf("link %s#%s: no such heading", file, anchor)
		}
	}
}

func readRepoFile(t *testing.T, parts ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", ".."}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hasHeading reports whether md has a heading whose GitHub anchor is anchor.
func hasHeading(md, anchor string) bool {
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(md, -1) {
		s := strings.ToLower(strings.TrimSpace(m[1]))
		s = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(s, "")
		if strings.ReplaceAll(s, " ", "-") == anchor {
			return true
		}
	}
	return false
}
