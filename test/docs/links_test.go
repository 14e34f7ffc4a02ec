package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	fencedBlock = regexp.MustCompile("(?s)```.*?```")
	inlineCode  = regexp.MustCompile("`[^`\n]*`")
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// TestDocLinks: every relative link of README.md and docs/*.md names a file that exists and, for a
// Markdown file, a heading it has. The README's reference material moved to docs/ (issue 41), so a link
// left pointing at the old place fails here instead of in a reader's browser.
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{filepath.Join("..", "..", "README.md")}, docs...)
	if len(files) < 15 {
		t.Fatalf("found %d documents: the scan is broken", len(files))
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := inlineCode.ReplaceAllString(fencedBlock.ReplaceAllString(string(b), ""), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), path)
			}
			rel, _ := filepath.Rel(filepath.Join("..", ".."), file)
			content, err := os.ReadFile(target)
			if err != nil {
				if _, statErr := os.Stat(target); statErr == nil {
					checked++ // a directory
					continue
				}
				t.Errorf("%s: link %s: no such file", rel, link)
				continue
			}
			checked++
			if anchor != "" && strings.HasSuffix(target, ".md") && !hasHeading(string(content), anchor) {
				t.Errorf("%s: link %s: no such heading", rel, link)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d links: the scan is broken", checked)
	}
}
