// Package realolm runs the real Operator Lifecycle Manager against envtest: OLM's olm and catalog operators
// (github.com/operator-framework/operator-lifecycle-manager, built from hack/olm by hack/olm-build.sh into
// bin/peers/) as processes, `opm serve` for a file-based catalog of the working tree's bundle, and the test
// in the role of the Deployment controller. OLM itself resolves the Subscription, installs the bundle and
// decides when the CSV has succeeded.
package realolm
