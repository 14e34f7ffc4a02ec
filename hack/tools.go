//go:build tools

// Package hack pins modules that several packages share, so parallel edits of go.mod stay stable.
package hack

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/vmware/govmomi/cli"
	_ "github.com/vmware/govmomi/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
)
