package iso

import (
	"strings"
	"testing"
)

func TestUpstreamHistoryPath(t *testing.T) {
	h := strings.Repeat("c", 64)
	const ds, prefix = "iso-ds", "agent-forge/clusters/workers"
	for _, tc := range []struct {
		name, path, sha string
		want            string
	}{
		{"upstream entry in the pool's folder", prefix + "/" + h + ".iso", h, "[iso-ds] " + prefix + "/" + h + ".iso"},
		{"without a recorded digest", prefix + "/" + h + ".iso", "", "[iso-ds] " + prefix + "/" + h + ".iso"},
		{"with a leading slash", "/" + prefix + "/" + h + ".iso", h, "[iso-ds] " + prefix + "/" + h + ".iso"},
		{"already ours", "[iso-ds] " + prefix + "/" + h + ".iso", h, ""},
		{"another pool's folder", "agent-forge/clusters/other/" + h + ".iso", h, ""},
		{"a subfolder", prefix + "/old/" + h + ".iso", h, ""},
		{"a dot-dot spelling", prefix + "/../workers/" + h + ".iso", h, ""},
		{"digest and name disagree", prefix + "/" + h + ".iso", strings.Repeat("d", 64), ""},
		{"not content-addressed", prefix + "/discovery.iso", "", ""},
		{"an upstream partial upload", prefix + "/" + h + ".iso.x.partial", h, ""},
	} {
		got, ok := UpstreamHistoryPath(tc.path, tc.sha, ds, prefix)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: UpstreamHistoryPath(%q) = %q, %t; want %q", tc.name, tc.path, got, ok, tc.want)
		}
	}
}

func TestUpstreamPartialPath(t *testing.T) {
	h := strings.Repeat("e", 64)
	const ds, prefix = "iso-ds", "agent-forge/clusters/workers"
	for p, want := range map[string]bool{
		DatastorePath(ds, prefix, h+".iso.agent-forge-iso-1234.partial"):    true,
		DatastorePath(ds, prefix, h+".iso.partial"):                         false,
		DatastorePath(ds, prefix, "x.iso.tmp.partial"):                      false,
		DatastorePath(ds, "agent-forge/clusters/other", h+".iso.t.partial"): false,
		DatastorePath("other-ds", prefix, h+".iso.t.partial"):               false,
		DatastorePath(ds, prefix, h+".iso"):                                 false,
	} {
		if got := isUpstreamPartialPath(p, ds, prefix); got != want {
			t.Errorf("isUpstreamPartialPath(%q) = %t, want %t", p, got, want)
		}
	}
}
