package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// spec.iso.caBundleRef and spec.iso.maxSize: what is admitted comes back as written, with the
// reference's kind and key defaulted (ConfigMap, ca.crt); the refusals are in invalidPools.
func TestISOTrustAndSizeFieldsAccepted(t *testing.T) {
	for _, tc := range []struct {
		name              string
		maxSize           interface{}
		ref               map[string]interface{}
		wantKind, wantKey string
	}{
		{"configmap by default, binary quantity", "1500Mi", map[string]interface{}{"name": "image-ca"}, "ConfigMap", "ca.crt"},
		{"secret with its own key, plain bytes", int64(2000000000), map[string]interface{}{"kind": "Secret", "name": "image.ca", "key": "tls_ca-bundle.pem"}, "Secret", "tls_ca-bundle.pem"},
		{"decimal quantity", "2G", map[string]interface{}{"kind": "ConfigMap", "name": "ca"}, "ConfigMap", "ca.crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := objectFromYAML(t, validPoolYAML)
			pool.SetName(uniqueName("iso-fields"))
			set("spec.iso.maxSize", tc.maxSize)(t, pool)
			set("spec.iso.caBundleRef", tc.ref)(t, pool)
			stored := createAndRead(t, pool)
			if got, _, _ := unstructured.NestedFieldNoCopy(stored.Object, "spec", "iso", "maxSize"); toInt64(got) != toInt64(tc.maxSize) {
				t.Errorf("maxSize stored as %#v, wrote %#v", got, tc.maxSize)
			}
			ref, _, _ := unstructured.NestedStringMap(stored.Object, "spec", "iso", "caBundleRef")
			if ref["name"] != tc.ref["name"] || ref["kind"] != tc.wantKind || ref["key"] != tc.wantKey {
				t.Errorf("caBundleRef stored as %v, want kind %s key %s", ref, tc.wantKind, tc.wantKey)
			}
		})
	}
}
