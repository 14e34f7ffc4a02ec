// Package olmcheck is OLM's rule for replacing a CRD that already exists, and the tools to put a cluster
// into the state that rule is checked against: CRDs and objects loaded from YAML, objects stored with
// their status through the status subresource, CRDs replaced in place or reinstalled. test/olm/realolm uses the
// loaders and stores (the upstream fixtures a cluster holds before the real OLM installs our bundle; the real
// OLM makes the check there); the controllers suite uses the rule itself (the whole migration story on a
// running world, without OLM).
package olmcheck

// T is what the helpers need of a test; *testing.T and Ginkgo's GinkgoT() both provide it.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}
