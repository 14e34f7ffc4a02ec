package agents

import "k8s.io/apimachinery/pkg/runtime"

func runtimeConvert(in map[string]any, out any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(in, out)
}
