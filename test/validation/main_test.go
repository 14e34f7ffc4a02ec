// Package validation proves that the VsphereAgentPool and VsphereAgent CRDs refuse bad objects at the
// API server (OpenAPI bounds, patterns, enums and CEL rules) and fill their defaults, using a real
// kube-apiserver started once for the package.
package validation

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// k8s is the client every test in this package uses; it talks to the envtest API server.
var k8s client.Client

const namespace = "default"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}()
	if err := checkFloor(env.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8s, err = client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// ctx is a background context; every API call in this package is quick and local.
var ctx = context.Background()
