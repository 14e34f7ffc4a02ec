//go:build tools

// Package tools pins operator-sdk for `go build` in this module.
package tools

import _ "github.com/operator-framework/operator-sdk/cmd/operator-sdk"
