//go:build tools

// Package tools pins opm for `go build` in this module.
package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
