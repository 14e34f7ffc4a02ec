package controllers_test

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/containeroo/agent-forge-operator/internal/agents"
)

func newAgentList() *unstructured.UnstructuredList { return agents.NewList(agents.AgentGVK) }
