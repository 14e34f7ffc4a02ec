package agents

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AsUnstructured returns o as unstructured (an empty object when it is typed).
func AsUnstructured(o client.Object) *unstructured.Unstructured {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u
	}
	return &unstructured.Unstructured{Object: map[string]any{}}
}
