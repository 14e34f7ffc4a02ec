package controllers_test

import (
	"fmt"
	"os"
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
// from the shard setting and the package's test files with Ginkgo containers, sorted by name and dealt out
// in turn so that every shard gets a share of the long and the short files.
func shardFocus(setting string, files []string) ([]string, error) {
	if setting == "" {
		return nil, nil
	}
	k, n, ok := strings.Cut(setting, "/")
	index, err1 := strconv.Atoi(k)
	total, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || total < 1 || index < 1 || index > total {
		return nil, fmt.Errorf("%s=%q: want k/n with 1 <= k <= n", ShardEnv, setting)
	}
	sort.Strings(files)
	var focus []string
	for i, f := range files {
		if i%total == index-1 {
			focus = append(focus, "/"+regexp.QuoteMeta(f)+"$")
		}
	}
	if len(focus) == 0 {
		focus = []string{"^$"} // more shards than files: this one runs nothing
	}
	return focus, nil
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
		if strings.Contains(string(src), "var _ = Describe(") {
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
		focus, err := shardFocus(setting, append([]string(nil), files...))
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
	if focus, _ := shardFocus("", files); focus != nil {
		t.Errorf("no setting focuses %v", focus)
	}
	for _, bad := range []string{"0/2", "3/2", "1", "a/b", "1/0"} {
		if _, err := shardFocus(bad, files); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
