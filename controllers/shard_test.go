package controllers_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// ShardEnv splits the scenario suite over processes run side by side: "k/n" runs the k-th of n shares of
// the spec files (each process starts its own API server, CAPI and simulator). The scenarios mostly wait
// on the API server, CAPI and the world, so two processes on two cores take little more than half the
// time of one; `make test` runs the suite as hack/test.sh's SUITE_SHARDS shards (2).
const ShardEnv = "AGENT_FORGE_SUITE_SHARD"

// shardFocus returns the regular expressions of the spec files this process runs (nil: all of them),
// from the shard setting and the deal of the package's test files with Ginkgo containers (dealShards).
func shardFocus(setting string, files []string, seconds map[string]float64) ([]string, error) {
	if setting == "" {
		return nil, nil
	}
	k, n, ok := strings.Cut(setting, "/")
	index, err1 := strconv.Atoi(k)
	total, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || total < 1 || index < 1 || index > total {
		return nil, fmt.Errorf("%s=%q: want k/n with 1 <= k <= n", ShardEnv, setting)
	}
	shardOf, _ := dealShards(files, seconds, total)
	var focus []string
	for _, f := range files {
		if shardOf[f] == index-1 {
			focus = append(focus, "/"+regexp.QuoteMeta(f)+"$")
		}
	}
	if len(focus) == 0 {
		focus = []string{"^$"} // more shards than files: this one runs nothing
	}
	return focus, nil
}

// dealShards deals files to total shards by the seconds each took in a recorded run
// (testdata/spec-seconds.tsv): longest first, each to the shard with the least work so far (ties to the
// lower shard), so the shards end together; a file without a record counts as the mean of the recorded
// ones. It returns each file's shard (0-based) and each shard's recorded seconds; every process computes
// the same deal.
func dealShards(files []string, seconds map[string]float64, total int) (map[string]int, []float64) {
	weight := func(f string) float64 {
		if s, ok := seconds[f]; ok {
			return s
		}
		return meanSeconds(seconds)
	}
	files = append([]string(nil), files...)
	sort.Slice(files, func(i, j int) bool {
		if wi, wj := weight(files[i]), weight(files[j]); wi != wj {
			return wi > wj
		}
		return files[i] < files[j]
	})
	load := make([]float64, total)
	shardOf := make(map[string]int, len(files))
	for _, f := range files {
		least := 0
		for s := range load {
			if load[s] < load[least] {
				least = s
			}
		}
		load[least] += weight(f)
		shardOf[f] = least
	}
	return shardOf, load
}

func meanSeconds(seconds map[string]float64) float64 {
	if len(seconds) == 0 {
		return 1
	}
	var sum float64
	for _, s := range seconds {
		sum += s
	}
	return sum / float64(len(seconds))
}

// specSecondsFile records how long each spec file took (file, tab, seconds); `hack/test.sh` prints a
// fresh record of every run (SpecTimesEnv) to refresh it from.
const specSecondsFile = "testdata/spec-seconds.tsv"

// SpecTimesEnv names a file the suite writes each spec file's seconds to, in specSecondsFile's format.
const SpecTimesEnv = "AGENT_FORGE_SPEC_TIMES"

// readSpecSeconds reads a record in specSecondsFile's format; a missing file is an empty record.
func readSpecSeconds(path string) (map[string]float64, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]float64{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for i, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, secs, ok := strings.Cut(line, "\t")
		v, err := strconv.ParseFloat(strings.TrimSpace(secs), 64)
		if !ok || err != nil || v < 0 {
			return nil, fmt.Errorf("%s:%d: want <file>\\t<seconds>, got %q", path, i+1, line)
		}
		out[name] = v
	}
	return out, nil
}

// formatSpecSeconds renders per-file seconds in specSecondsFile's format, longest first.
func formatSpecSeconds(seconds map[string]float64) string {
	names := make([]string, 0, len(seconds))
	for f := range seconds {
		names = append(names, f)
	}
	sort.Slice(names, func(i, j int) bool {
		if seconds[names[i]] != seconds[names[j]] {
			return seconds[names[i]] > seconds[names[j]]
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	for _, f := range names {
		fmt.Fprintf(&b, "%s\t%.1f\n", f, seconds[f])
	}
	return b.String()
}

// describes finds a top-level Ginkgo container (at the start of a line, so not this file's own mention).
var describes = regexp.MustCompile(`(?m)^var _ = Describe\(`)

// shardRecord returns the package's spec files and the committed record of their seconds.
func shardRecord() ([]string, map[string]float64, error) {
	files, err := specFiles()
	if err != nil {
		return nil, nil, err
	}
	seconds, err := readSpecSeconds(specSecondsFile)
	return files, seconds, err
}

// specFiles lists the package's test files that hold Ginkgo containers.
func specFiles() ([]string, error) {
	entries, err := os.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		if describes.Match(src) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// The shards cover every spec file exactly once, and a wrong setting is refused.
func TestShardFocus(t *testing.T) {
	files := []string{"e_test.go", "a_test.go", "c_test.go", "b_test.go", "d_test.go"}
	seen := map[string]int{}
	for _, setting := range []string{"1/3", "2/3", "3/3"} {
		focus, err := shardFocus(setting, files, map[string]float64{"c_test.go": 30, "a_test.go": 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			for _, re := range focus {
				if regexp.MustCompile(re).MatchString("/src/controllers/" + f) {
					seen[f]++
				}
			}
		}
	}
	for _, f := range files {
		if seen[f] != 1 {
			t.Errorf("%s runs in %d shards, want 1", f, seen[f])
		}
	}
	if focus, _ := shardFocus("", files, nil); focus != nil {
		t.Errorf("no setting focuses %v", focus)
	}
	for _, bad := range []string{"0/2", "3/2", "1", "a/b", "1/0"} {
		if _, err := shardFocus(bad, files, nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The deal follows the recorded seconds: the longest file alone on one shard when it outweighs the rest,
// unrecorded files weighed as the mean, and the record read back as written.
func TestShardFocusBalancesRecordedSeconds(t *testing.T) {
	files := []string{"long_test.go", "a_test.go", "b_test.go", "c_test.go", "new_test.go"}
	seconds := map[string]float64{"long_test.go": 100, "a_test.go": 30, "b_test.go": 20, "c_test.go": 10}
	shard := func(setting string) []string {
		focus, err := shardFocus(setting, files, seconds)
		if err != nil {
			t.Fatal(err)
		}
		return focus
	}
	// Longest first: long -> 1; a, b, c, and new (mean 40) -> 2 (30+20+10+40 = 100).
	if got := shard("1/2"); len(got) != 1 || got[0] != "/long_test\\.go$" {
		t.Errorf("shard 1/2 = %q, want only long_test.go", got)
	}
	if got := shard("2/2"); len(got) != 4 {
		t.Errorf("shard 2/2 = %q, want the four others", got)
	}
	path := filepath.Join(t.TempDir(), "seconds.tsv")
	if err := os.WriteFile(path, []byte("# comment\n"+formatSpecSeconds(seconds)), 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := readSpecSeconds(path)
	if err != nil || len(back) != len(seconds) || back["long_test.go"] != 100 || back["c_test.go"] != 10 {
		t.Errorf("read back %v, %v", back, err)
	}
	if err := os.WriteFile(path, []byte("a_test.go 12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readSpecSeconds(path); err == nil {
		t.Error("a line without a tab was accepted")
	}
	if got, err := readSpecSeconds(filepath.Join(t.TempDir(), "absent.tsv")); err != nil || len(got) != 0 {
		t.Errorf("absent record = %v, %v", got, err)
	}
}

// With the committed record, `make test`'s two shards get about the same work: the slower one is what
// CI waits for.
func TestRecordedShardsBalance(t *testing.T) {
	files, seconds, err := shardRecord()
	if err != nil {
		t.Fatal(err)
	}
	_, loads := dealShards(files, seconds, 2)
	if total, slower := loads[0]+loads[1], max(loads[0], loads[1]); slower > 0.52*total {
		t.Errorf("shards %.0f s and %.0f s: the slower holds %.0f%% of the suite", loads[0], loads[1], 100*slower/total)
	}
}
