// Package tlsprofile turns OpenShift's cluster-wide TLS security profile (the APIServer "cluster"
// object's spec.tlsSecurityProfile) into the settings of the operator's own TLS servers, as OpenShift
// asks of the operators it runs.
package tlsprofile

import (
	"crypto/tls"
	"fmt"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
)

// Profile is what a server applies: the minimum version and, for TLS 1.2 and below, the cipher suites.
// Go does not let a server choose TLS 1.3 suites (all three are always on), so they are not listed.
type Profile struct {
	// Type is Old, Intermediate, Modern or Custom.
	Type       configv1.TLSProfileType
	MinVersion uint16
	// CipherSuites for TLS 1.2 and below; nil when MinVersion is TLS 1.3.
	CipherSuites []uint16
	// Unsupported names the profile's ciphers Go cannot offer (DHE, some CBC-SHA384 suites): left out.
	Unsupported []string
}

// Default is OpenShift's default profile (Intermediate), used when the cluster names none.
func Default() Profile {
	p, err := FromSpec(nil)
	if err != nil {
		panic(err) // Intermediate always maps
	}
	return p
}

// Apply sets c's minimum version and cipher suites.
func (p Profile) Apply(c *tls.Config) {
	c.MinVersion = p.MinVersion
	c.CipherSuites = slices.Clone(p.CipherSuites)
}

// Equal tells whether two profiles configure a server the same way.
func (p Profile) Equal(o Profile) bool {
	return p.Type == o.Type && p.MinVersion == o.MinVersion && slices.Equal(p.CipherSuites, o.CipherSuites)
}

// String is a short description for logs and errors.
func (p Profile) String() string {
	return fmt.Sprintf("%s (minimum %s, %d TLS 1.2 cipher suites)", p.Type, tls.VersionName(p.MinVersion), len(p.CipherSuites))
}

// FromSpec maps a TLSSecurityProfile: nil or an empty type is OpenShift's default, Intermediate; the
// named profiles use openshift/api's own definitions; Custom uses its ciphers and minimum version.
func FromSpec(spec *configv1.TLSSecurityProfile) (Profile, error) {
	typ := configv1.TLSProfileIntermediateType
	if spec != nil && spec.Type != "" {
		typ = spec.Type
	}
	var ps *configv1.TLSProfileSpec
	switch typ {
	case configv1.TLSProfileCustomType:
		if spec.Custom == nil {
			return Profile{}, fmt.Errorf("TLS security profile type Custom without custom settings")
		}
		ps = &spec.Custom.TLSProfileSpec
	default:
		var ok bool
		if ps, ok = configv1.TLSProfiles[typ]; !ok {
			return Profile{}, fmt.Errorf("unknown TLS security profile type %q", typ)
		}
	}
	minVersion, ok := versions[ps.MinTLSVersion]
	if !ok {
		return Profile{}, fmt.Errorf("TLS security profile %s: unknown minTLSVersion %q", typ, ps.MinTLSVersion)
	}
	p := Profile{Type: typ, MinVersion: minVersion}
	for _, name := range ps.Ciphers {
		switch id, known := cipherID(name); {
		case tls13Suites[name]:
			// always on under TLS 1.3
		case known:
			if minVersion < tls.VersionTLS13 && !slices.Contains(p.CipherSuites, id) {
				p.CipherSuites = append(p.CipherSuites, id)
			}
		default:
			p.Unsupported = append(p.Unsupported, name)
		}
	}
	if minVersion < tls.VersionTLS13 && len(p.CipherSuites) == 0 {
		return Profile{}, fmt.Errorf("TLS security profile %s: none of its ciphers is available for TLS 1.2 and below (%v)", typ, ps.Ciphers)
	}
	return p, nil
}

var versions = map[configv1.TLSProtocolVersion]uint16{
	configv1.VersionTLS10: tls.VersionTLS10,
	configv1.VersionTLS11: tls.VersionTLS11,
	configv1.VersionTLS12: tls.VersionTLS12,
	configv1.VersionTLS13: tls.VersionTLS13,
}

var tls13Suites = map[string]bool{"TLS_AES_128_GCM_SHA256": true, "TLS_AES_256_GCM_SHA384": true, "TLS_CHACHA20_POLY1305_SHA256": true}

// openSSLNames maps the OpenSSL cipher names OpenShift's profiles use to Go's suites. Names not here
// and not IANA names Go knows (DHE-*, ECDHE-*-AES256-SHA384, AES256-SHA256) have no Go implementation.
var openSSLNames = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA256":     tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-AES128-SHA256":       tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA256":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	"DES-CBC3-SHA":                  tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
}

// cipherID resolves an OpenSSL name, or an IANA name as a Custom profile may give it.
func cipherID(name string) (uint16, bool) {
	if id, ok := openSSLNames[name]; ok {
		return id, true
	}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if s.Name == name {
			return s.ID, true
		}
	}
	return 0, false
}
