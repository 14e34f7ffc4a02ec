package redact

import (
	"strings"
	"testing"
)

// Conditions, Events and status messages quote error texts of HTTP and SOAP clients (they were
// redacted by the controllers' RedactText, now String itself).
func TestStringRedactsMessages(t *testing.T) {
	tests := []struct {
		name, in string
		never    []string
	}{
		{"user info", `Post "https://admin:hunter2@vc.example.com/sdk": dial tcp: refused`, []string{"hunter2", "admin:"}},
		{"query token", "GET https://hub.example.com/images/x?api_key=s3cr3t failed", []string{"s3cr3t", "api_key"}},
		{"no URL stays as is", "credentials Secret ns/x not found", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.in)
			for _, n := range tt.never {
				if strings.Contains(got, n) {
					t.Fatalf("%q still contains %q", got, n)
				}
			}
			if tt.never == nil && got != tt.in {
				t.Fatalf("changed %q to %q", tt.in, got)
			}
		})
	}
}
