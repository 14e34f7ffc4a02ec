package tlsprofile

import (
	"crypto/tls"
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

func TestFromSpec(t *testing.T) {
	intermediateSuites := []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
	custom := func(minV configv1.TLSProtocolVersion, ciphers ...string) *configv1.TLSSecurityProfile {
		return &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType,
			Custom: &configv1.CustomTLSProfile{TLSProfileSpec: configv1.TLSProfileSpec{MinTLSVersion: minV, Ciphers: ciphers}}}
	}
	for _, tc := range []struct {
		name        string
		spec        *configv1.TLSSecurityProfile
		wantType    configv1.TLSProfileType
		wantMin     uint16
		wantSuites  []uint16
		unsupported []string
		wantErr     bool
	}{
		{name: "unset is Intermediate", wantType: "Intermediate", wantMin: tls.VersionTLS12, wantSuites: intermediateSuites,
			unsupported: []string{"DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384"}},
		{name: "empty type is Intermediate", spec: &configv1.TLSSecurityProfile{}, wantType: "Intermediate", wantMin: tls.VersionTLS12,
			wantSuites: intermediateSuites, unsupported: []string{"DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384"}},
		{name: "Modern is TLS 1.3 only", spec: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType}, wantType: "Modern", wantMin: tls.VersionTLS13},
		{name: "Old reaches down to TLS 1.0 and CBC suites", spec: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileOldType}, wantType: "Old",
			wantMin: tls.VersionTLS10, wantSuites: append(slices.Clone(intermediateSuites),
				tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
				tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
				tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
				tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
				tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA),
			unsupported: []string{"DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384", "DHE-RSA-CHACHA20-POLY1305",
				"ECDHE-ECDSA-AES256-SHA384", "ECDHE-RSA-AES256-SHA384", "DHE-RSA-AES128-SHA256", "DHE-RSA-AES256-SHA256", "AES256-SHA256"}},
		{name: "Custom with OpenSSL and IANA names", spec: custom(configv1.VersionTLS12, "ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256"),
			wantType: "Custom", wantMin: tls.VersionTLS12, wantSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}},
		{name: "Custom TLS 1.3 ignores TLS 1.2 suites", spec: custom(configv1.VersionTLS13, "ECDHE-RSA-AES128-GCM-SHA256"), wantType: "Custom", wantMin: tls.VersionTLS13},
		{name: "Custom without settings", spec: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType}, wantErr: true},
		{name: "Custom with only suites Go lacks", spec: custom(configv1.VersionTLS12, "DHE-RSA-AES128-GCM-SHA256"), wantErr: true},
		{name: "Custom with an unknown version", spec: custom("VersionTLS14", "ECDHE-RSA-AES128-GCM-SHA256"), wantErr: true},
		{name: "unknown type", spec: &configv1.TLSSecurityProfile{Type: "Paranoid"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := FromSpec(tc.spec)
			if (err != nil) != tc.wantErr {
				t.Fatalf("FromSpec() error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if p.Type != tc.wantType || p.MinVersion != tc.wantMin || !slices.Equal(p.CipherSuites, tc.wantSuites) || !slices.Equal(p.Unsupported, tc.unsupported) {
				t.Errorf("FromSpec() = %+v, want type %s min %x suites %v unsupported %v", p, tc.wantType, tc.wantMin, tc.wantSuites, tc.unsupported)
			}
			var c tls.Config
			p.Apply(&c)
			if c.MinVersion != tc.wantMin || !slices.Equal(c.CipherSuites, tc.wantSuites) {
				t.Errorf("Apply: min %x suites %v", c.MinVersion, c.CipherSuites)
			}
		})
	}
}
