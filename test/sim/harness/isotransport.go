package harness

import (
	"crypto/tls"
	"fmt"

	"github.com/containeroo/agent-forge-operator/test/sim"
)

// ISOOverHTTPS is the summary note of a run whose ISO downloads all went over HTTPS to a server signed
// by a private CA that the operator trusted through the injected bundle alone.
const ISOOverHTTPS = "ISO over HTTPS (private CA via injected bundle)"

// ISOOverHTTPSViolations checks, from the ISO server's own counters, that the operator fetched the ISO,
// only over TLS 1.2 or later, and that no handshake failed (a failure means the operator did not trust the
// server's CA at that moment, or spoke plain HTTP to the HTTPS port).
func ISOOverHTTPSViolations(iso *sim.ISOServer) []string {
	var out []string
	downloads, overTLS := iso.Downloads(), iso.TLSDownloads()
	switch {
	case downloads == 0:
		out = append(out, "the ISO server served no download: the operator never fetched the discovery ISO")
	case overTLS == 0:
		out = append(out, fmt.Sprintf("none of the %d ISO downloads went over HTTPS", downloads))
	}
	if plain := downloads - overTLS; plain > 0 && overTLS > 0 {
		out = append(out, fmt.Sprintf("%d of %d ISO downloads went over plain HTTP", plain, downloads))
	}
	if n := iso.PlainRequests(); n > 0 {
		out = append(out, fmt.Sprintf("%d requests reached the ISO server over plain HTTP", n))
	}
	if v := iso.MinTLSVersion(); v != 0 && v < tls.VersionTLS12 {
		out = append(out, fmt.Sprintf("an ISO request negotiated %s, below TLS 1.2", tls.VersionName(v)))
	}
	if n := iso.TLSHandshakeErrors(); n > 0 {
		out = append(out, fmt.Sprintf("%d TLS handshakes with the ISO server failed (the operator did not trust its CA, or spoke plain HTTP to it)", n))
	}
	return out
}
