package olm

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// releasedLock is the committed record of every released bundle (catalog/released-bundles.lock, hidden from
// opm by catalog/.indexignore): one line "<version> sha256:<hex of catalog/<package>/bundle-v<version>.yaml>
// createdAt=<the CSV's createdAt>" per version CHANGELOG.md lists as released.
const releasedLock = "released-bundles.lock"

// changelogVersion is a version heading of CHANGELOG.md; a heading that says "not yet published" (or
// "Unreleased") is the version in development.
var changelogVersion = regexp.MustCompile(`^## (\d+\.\d+\.\d+)\b(.*)$`)

// releaseState is what the release check reads: CHANGELOG.md's versions, the catalog's bundle files by
// version (file content and the CSV's createdAt) and the lock's lines.
type releaseState struct {
	released    []string
	development []string
	// bundles maps a catalog bundle's version to its file's content.
	bundles map[string][]byte
	// lock maps a version to its recorded digest and createdAt.
	lock map[string]lockLine
	// current is the working tree's CSV version (bundle/).
	current string
}

type lockLine struct{ digest, createdAt string }

// releaseProblems is the rule: the catalog holds only released versions and at most the one in
// development (which is the working tree's); each released version has its bundle file in the catalog,
// unchanged since its release (same sha256 as the lock) with the same createdAt; the lock lists only
// released versions.
func releaseProblems(s releaseState) []string {
	var problems []string
	released := map[string]bool{}
	for _, v := range s.released {
		released[v] = true
	}
	if len(s.development) > 1 {
		problems = append(problems, fmt.Sprintf("CHANGELOG.md has %d versions in development %v; at most one", len(s.development), s.development))
	}
	for _, v := range s.development {
		if released[v] {
			problems = append(problems, fmt.Sprintf("CHANGELOG.md lists %s as both released and in development", v))
		}
		if v != s.current {
			problems = append(problems, fmt.Sprintf("CHANGELOG.md's version in development is %s, the bundle is %s", v, s.current))
		}
	}
	for _, v := range sortedKeys(s.bundles) {
		if released[v] {
			continue
		}
		if len(s.development) == 0 || v != s.development[0] {
			problems = append(problems, fmt.Sprintf("catalog/ holds %s, which CHANGELOG.md lists neither as released nor as the version in development", v))
		}
	}
	for _, v := range s.released {
		content, ok := s.bundles[v]
		if !ok {
			problems = append(problems, fmt.Sprintf("released version %s has no bundle file in catalog/ (a release is never removed)", v))
			continue
		}
		want, ok := s.lock[v]
		if !ok {
			problems = append(problems, fmt.Sprintf("released version %s is not in %s (record it when releasing)", v, releasedLock))
			continue
		}
		sum := sha256.Sum256(content)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != want.digest {
			problems = append(problems, fmt.Sprintf("the catalog's bundle of released version %s changed: %s, %s records %s (a fix is a new version)", v, got, releasedLock, want.digest))
		}
		if got := bundleCreatedAt(content); got != want.createdAt {
			problems = append(problems, fmt.Sprintf("released version %s: CSV createdAt %q, %s records %q", v, got, releasedLock, want.createdAt))
		}
	}
	for _, v := range sortedKeys(s.lock) {
		if !released[v] {
			problems = append(problems, fmt.Sprintf("%s records %s, which CHANGELOG.md does not list as released", releasedLock, v))
		}
	}
	return problems
}

// TestReleasedBundlesAreImmutable applies releaseProblems to the repository. CHANGELOG.md decides what is
// released: 0.2.0 is "not yet published", so today the catalog holds only the version in development and
// the lock records nothing; the first release adds its line (see the lock's header).
func TestReleasedBundlesAreImmutable(t *testing.T) {
	s := loadReleaseState(t)
	t.Logf("released: %v, in development: %v, catalog: %v", s.released, s.development, sortedKeys(s.bundles))
	for _, p := range releaseProblems(s) {
		t.Error(p)
	}
}

// TestReleaseRuleRefuses: the rule fails for each way a released bundle could change silently, on the
// repository's state with one release planted (so the check is shown to fail, not only to pass).
func TestReleaseRuleRefuses(t *testing.T) {
	bundle := []byte("schema: olm.bundle\nname: agent-forge-operator.v0.1.0\n" + csvProperty("2026-06-15T09:00:00Z"))
	sum := sha256.Sum256(bundle)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	base := func() releaseState {
		return releaseState{
			released: []string{"0.1.0"}, development: []string{"0.2.0"}, current: "0.2.0",
			bundles: map[string][]byte{"0.1.0": bundle, "0.2.0": []byte("x")},
			lock:    map[string]lockLine{"0.1.0": {digest: digest, createdAt: "2026-06-15T09:00:00Z"}},
		}
	}
	if p := releaseProblems(base()); len(p) != 0 {
		t.Fatalf("the planted release is refused: %v", p)
	}
	for _, tc := range []struct {
		name   string
		change func(*releaseState)
		want   string
	}{
		{"a released bundle re-rendered", func(s *releaseState) { s.bundles["0.1.0"] = append([]byte("# again\n"), bundle...) }, "changed"},
		{"createdAt moved", func(s *releaseState) {
			s.bundles["0.1.0"] = []byte("schema: olm.bundle\n" + csvProperty("2026-12-01T00:00:00Z"))
		}, "createdAt"},
		{"a released bundle removed", func(s *releaseState) { delete(s.bundles, "0.1.0") }, "no bundle file"},
		{"a release not recorded", func(s *releaseState) { delete(s.lock, "0.1.0") }, "not in"},
		{"an unreleased version in the catalog", func(s *releaseState) { s.bundles["0.3.0"] = []byte("x") }, "neither as released"},
		{"two versions in development", func(s *releaseState) { s.development = append(s.development, "0.3.0") }, "at most one"},
		{"the lock records an unreleased version", func(s *releaseState) { s.lock["0.2.0"] = lockLine{digest: digest} }, "does not list as released"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.change(&s)
			p := strings.Join(releaseProblems(s), "\n")
			if !strings.Contains(p, tc.want) {
				t.Errorf("want a problem containing %q, got:\n%s", tc.want, p)
			}
		})
	}
}

// csvProperty is an olm.bundle.object property carrying a CSV with createdAt (as opm renders it).
func csvProperty(createdAt string) string {
	obj, _ := json.Marshal(map[string]any{"kind": "ClusterServiceVersion", "metadata": map[string]any{"annotations": map[string]any{"createdAt": createdAt}}})
	return fmt.Sprintf("properties:\n- type: olm.bundle.object\n  value:\n    data: %s\n", base64.StdEncoding.EncodeToString(obj))
}

func loadReleaseState(t *testing.T) releaseState {
	t.Helper()
	s := releaseState{bundles: map[string][]byte{}, lock: map[string]lockLine{}, current: loadCurrentBundle(t).csv.Spec.Version}
	changelog, err := repoPath("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range readLines(t, changelog) {
		m := changelogVersion.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rest := strings.ToLower(m[2])
		if strings.Contains(rest, "not yet published") || strings.Contains(rest, "unreleased") {
			s.development = append(s.development, m[1])
		} else {
			s.released = append(s.released, m[1])
		}
	}
	dir, err := repoPath("catalog", packageName)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "bundle-v*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		objs, err := loadCatalog(filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "bundle-v"), ".yaml")
		found := false
		for _, o := range objs {
			found = found || (o.Schema == "olm.bundle" && o.Name == packageName+".v"+v)
		}
		if !found {
			t.Errorf("%s holds no olm.bundle %s.v%s", f, packageName, v)
		}
		content, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s.bundles[v] = content
	}
	lock, err := repoPath("catalog", releasedLock)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range readLines(t, lock) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(f[1]) || !strings.HasPrefix(f[2], "createdAt=") {
			t.Fatalf("%s:%d: want \"<version> sha256:<64 hex> createdAt=<time>\", got %q", releasedLock, i+1, line)
		}
		s.lock[f[0]] = lockLine{digest: f[1], createdAt: strings.TrimPrefix(f[2], "createdAt=")}
	}
	return s
}

// bundleCreatedAt is the createdAt annotation of the CSV a catalog bundle file embeds ("" if none).
func bundleCreatedAt(content []byte) string {
	dir, err := os.MkdirTemp("", "bundle-created-at-")
	if err != nil {
		return ""
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if os.WriteFile(filepath.Join(dir, "b.yaml"), content, 0o600) != nil {
		return ""
	}
	objs, err := loadCatalog(dir)
	if err != nil {
		return ""
	}
	for _, o := range objs {
		raw, err := bundleObjects(o)
		if err != nil {
			return ""
		}
		for _, r := range raw {
			var c struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if json.Unmarshal(r, &c) == nil && c.Kind == "ClusterServiceVersion" {
				return c.Metadata.Annotations["createdAt"]
			}
		}
	}
	return ""
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
