// Package olmcheck is OLM's rule for replacing a CRD that already exists, and the tools to put a cluster
// into the state that rule is checked against: CRDs and objects loaded from YAML, objects stored with
// their status through the status subresource, CRDs replaced in place or reinstalled. It is shared by
// test/olm (the upstream fixtures) and the controllers suite (the whole migration story on a running
// world), so both check the same rule.
package olmcheck

// T is what the helpers need of a test; *testing.T and Ginkgo's GinkgoT() both provide it.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}
