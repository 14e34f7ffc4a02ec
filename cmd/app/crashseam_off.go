//go:build !crashpoints

package app

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
)

// CrashPointsCompiled is false in the shipped build: no crash-point seam is compiled in, so no
// environment variable can pause or announce a worker (test/manager's TestShippedBinaryLacksCrashSeam
// checks the binary `make build` and the Dockerfile produce).
const CrashPointsCompiled = false

// crashSeamFromEnv never installs a seam in the shipped build, whatever the environment says.
func crashSeamFromEnv() func(context.Context, string, types.NamespacedName) { return nil }
