package iso

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

func TestPoolISOPath(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	pool := func(path, sum string) *afv1.VsphereAgentPool {
		p := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "workers"}}
		p.Spec.VSphere.ISODatastore = "ds1"
		if path != "" {
			p.Status.ISO = &afv1.ISOStatus{Path: path, SHA256: sum}
		}
		return p
	}
	for _, tc := range []struct{ name, path, sum, want string }{
		{"none", "", "", ""},
		{"ours", "[ds1] agent-forge/t1/workers/" + sha + ".iso", sha, "[ds1] agent-forge/t1/workers/" + sha + ".iso"},
		{"upstream's, without the datastore", "agent-forge/t1/workers/" + sha + ".iso", sha, "[ds1] agent-forge/t1/workers/" + sha + ".iso"},
		{"a bare path of another folder is none", "elsewhere/" + sha + ".iso", sha, ""},
		{"a bare path whose name is not the digest is none", "agent-forge/t1/workers/" + strings.Repeat("cd", 32) + ".iso", sha, ""},
	} {
		if got := PoolISOPath(pool(tc.path, tc.sum)); got != tc.want {
			t.Errorf("%s: PoolISOPath = %q, want %q", tc.name, got, tc.want)
		}
	}
}
