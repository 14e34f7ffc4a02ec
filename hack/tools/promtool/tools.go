//go:build tools

// Package tools pins promtool for `go build` in this module.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
