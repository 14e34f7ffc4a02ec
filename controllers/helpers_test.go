package controllers_test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/containeroo/agent-forge-operator/internal/agents"
)

func newAgentList() *unstructured.UnstructuredList { return agents.NewList(agents.AgentGVK) }

// eventOccurrences is how often an Event happened: the events.k8s.io recorder folds repeats into a
// series, which the core view shows as series.count (its count stays 0).
func eventOccurrences(e corev1.Event) int32 {
	if e.Series != nil {
		return max(e.Series.Count, 1)
	}
	return max(e.Count, 1)
}
