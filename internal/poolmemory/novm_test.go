package poolmemory

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// Only a first create attempt that started after the pool recorded the VsphereAgent skips the search;
// an attempt that ran before the record (the watch was faster than the pool) keeps every retry searching.
func TestNoVMYet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps string // a: Add, t: Take, f: Forget
		want  []bool // results of the Takes, in order
	}{
		{"recorded, then tried: the first attempt skips, the retry searches", "att", []bool{true, false}},
		{"tried before the record: every attempt searches", "tatt", []bool{false, false, false}},
		{"never recorded (after a restart): searches", "tt", []bool{false, false}},
		{"recorded twice: still only one skip", "aatt", []bool{true, false}},
		{"forgotten with its VsphereAgent: a new record counts again", "tfat", []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n NoVMYet
			uid := types.UID("u")
			var got []bool
			for _, s := range tc.steps {
				switch s {
				case 'a':
					n.Add(uid)
				case 't':
					got = append(got, n.Take(uid))
				case 'f':
					n.Forget(uid)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("takes %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("takes %v, want %v", got, tc.want)
				}
			}
		})
	}
	var none *NoVMYet
	none.Add("u")
	none.Forget("u")
	if none.Take("u") {
		t.Fatal("a nil NoVMYet never skips the search")
	}
}
