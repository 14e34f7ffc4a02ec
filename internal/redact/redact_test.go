package redact_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/redact"
)

// isoJWT has the shape of the assisted image service's api_key (ES256 JWT).
const isoJWT = "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJpbmZyYV9lbnZfaWQiOiI3ZjQ3In0.MEUCIQD4-x_yz09"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		secrets        []string
	}{
		{name: "vCenter server with user info in a SOAP error",
			in:   `Post "https://admin:hunter2@vc.example.com/sdk": dial tcp 10.0.0.5:443: i/o timeout`,
			want: `Post "https://REDACTED@vc.example.com/sdk": dial tcp 10.0.0.5:443: i/o timeout`},
		{name: "password holding an unescaped @",
			in: "https://admin:p@ss@vc.example.com/sdk", want: "https://REDACTED@vc.example.com/sdk"},
		{name: "token as the whole user info",
			in: "clone https://ghp_abcdef123@git.example.com/x failed", want: "clone https://REDACTED@git.example.com/x failed"},
		{name: "proxy URL with credentials",
			in: "proxyconnect tcp via http://proxyuser:pr0xy@proxy.corp:3128", want: "proxyconnect tcp via http://REDACTED@proxy.corp:3128"},
		{name: "assisted image service ISO URL: the whole query goes",
			in:   "GET https://ais.example.com/images/7f47?api_key=" + isoJWT + "&arch=x86_64&type=minimal-iso&version=4.16: EOF",
			want: "GET https://ais.example.com/images/7f47?REDACTED: EOF"},
		{name: "assisted image service token path segments",
			in:   "https://ais.example.com/byapikey/" + isoJWT + "/4.16/x86_64/minimal.iso and /bytoken/abc123/x",
			want: "https://ais.example.com/byapikey/REDACTED/4.16/x86_64/minimal.iso and /bytoken/REDACTED/x"},
		{name: "S3 pre-signed URL",
			in: "https://bucket.s3.amazonaws.com/rhcos.iso?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20260101" +
				"&X-Amz-Date=20260101T000000Z&X-Amz-Signature=0123abcd&X-Amz-Security-Token=FwoGZX&X-Amz-SignedHeaders=host",
			want: "https://bucket.s3.amazonaws.com/rhcos.iso?REDACTED"},
		{name: "Azure SAS and generic tokens",
			in:   "https://acct.blob.core.windows.net/c/x.iso?sv=2022-11-02&se=2026&sig=abc%2Bdef%3D&token=t0k&access_token=a1",
			want: "https://acct.blob.core.windows.net/c/x.iso?REDACTED"},
		{name: "query pairs outside a URL", in: "sent sv=2022-11-02&sig=abc%2Bdef&client_secret=cs1 upstream",
			want: "sent sv=2022-11-02&sig=REDACTED&client_secret=REDACTED upstream"},
		{name: "fragment", in: "https://h.example/x#access_token=abc", want: "https://h.example/x#REDACTED"},
		{name: "sentence punctuation after a URL stays", in: "see https://h.example/x?a=b.", want: "see https://h.example/x?REDACTED."},
		{name: "PEM private key", in: "key: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY----- end",
			want: "key: -----BEGIN RSA PRIVATE KEY-----REDACTED-----END RSA PRIVATE KEY----- end"},
		{name: "truncated PEM private key", in: "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
			want: "-----BEGIN PRIVATE KEY-----REDACTED-----END PRIVATE KEY-----"},
		{name: "lower-case basic credentials", in: "authorization: basic dXNlcjpwYXNz", want: "authorization: basic REDACTED"},
		{name: "password= pairs in prose",
			in: "login failed: user=admin password=hunter2 host=vc", want: "login failed: user=admin password=REDACTED host=vc"},
		{name: "quoted pair value", in: `pwd="a b c" next`, want: `pwd=REDACTED next`},
		{name: "JSON", in: `{"username":"admin","password":"hunter2","client_secret": "s"}`,
			want: `{"username":"admin","password":"REDACTED","client_secret": "REDACTED"}`},
		{name: "YAML", in: "username: admin\npassword: hunter2\n", want: "username: admin\npassword: REDACTED\n"},
		{name: "bearer token", in: "Authorization: Bearer abc.def-ghi~=", want: "Authorization: Bearer REDACTED"},
		{name: "basic credentials", in: "Authorization: Basic dXNlcjpwYXNz", want: "Authorization: Basic REDACTED"},
		{name: "bare JWT", in: "token " + isoJWT + " was rejected", want: "token REDACTED was rejected"},
		{name: "given secret", in: "login as admin with s3cr3t-pw failed", secrets: []string{"s3cr3t-pw"},
			want: "login as admin with REDACTED failed"},
		{name: "given secret, query-escaped", in: "sent u=a%2Fb+c", secrets: []string{"a/b c"},
			want: "sent u=REDACTED"},
		{name: "overlapping given secrets become one mask", in: "xxabcdyy", secrets: []string{"abc", "bcd"}, want: "xxREDACTEDyy"},
		{name: "given secret made of the mask's letters gets another mask", in: "a EDAC b", secrets: []string{"EDAC"},
			want: "a [redacted] b"},
		{name: "empty secrets are ignored", in: "nothing here", secrets: []string{"", ""}, want: "nothing here"},
		{name: "plain errors stay readable",
			in:   "Login: AuthenticationFailed (InvalidLogin): Cannot complete login due to an incorrect user name or password.",
			want: "Login: AuthenticationFailed (InvalidLogin): Cannot complete login due to an incorrect user name or password."},
		{name: "hosts and paths stay", in: "https://vcenter01.example12.internal1:8443/sdk dial tcp 127.0.0.1:443: connection refused",
			want: "https://vcenter01.example12.internal1:8443/sdk dial tcp 127.0.0.1:443: connection refused"},
		{name: "datastore paths stay", in: "[LocalDS_0] agent-forge/ns/pool/0123abcd.iso not found",
			want: "[LocalDS_0] agent-forge/ns/pool/0123abcd.iso not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redact.String(tc.in, tc.secrets...); got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestErrorAndHostOf(t *testing.T) {
	if got := redact.Error(nil); got != "" {
		t.Errorf("Error(nil) = %q", got)
	}
	if got := redact.Error(errors.New("password=x"), "x"); got != "password=REDACTED" {
		t.Errorf("Error = %q", got)
	}
	for in, want := range map[string]string{
		"https://user:pw@vc.example.com:8443/sdk?token=x": "vc.example.com:8443",
		"vc.example.com":      "vc.example.com",
		"vc.example.com:443":  "vc.example.com:443",
		"user:pw@vc.example":  "vc.example",
		"https://user:p w@vc": "",
		"":                    "",
	} {
		if got := redact.HostOf(in); got != want {
			t.Errorf("HostOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRedact embeds a random secret where secrets live (URL user info, an api_key query value, anywhere
// in a text as a given secret) and asserts that no form of it survives. `go test` runs the seeds.
func FuzzRedact(f *testing.F) {
	for _, seed := range []struct {
		secret, noise string
	}{
		{"hunter2", ""}, {"p@ss:w/rd?#&=", "https://"}, {isoJWT, "api_key="}, {"a b\tc\n", "password="},
		{"REDACTED", "x"}, {"EDAC", "R"}, {"Dx", "password=REDACTED"}, {"%2F", "%"}, {"日本語パスワード", "@"},
		{"'\"<>", "\"password\":"}, {"ab", "aabb"},
	} {
		f.Add(seed.secret, seed.noise)
	}
	f.Fuzz(func(t *testing.T, secret, noise string) {
		if secret == "" {
			return
		}
		forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}

		// Given explicitly: never in the output, whatever surrounds it.
		out := redact.String(noise+secret+noise, secret)
		if strings.Contains(out, secret) {
			t.Fatalf("given secret %q survives in %q", secret, out)
		}

		// As the password of a vCenter server URL quoted by an HTTP error.
		userinfo := url.UserPassword("admin", secret).String()
		in := `Post "https://` + userinfo + `@vc.example.com/sdk": EOF`
		want := `Post "https://REDACTED@vc.example.com/sdk": EOF`
		checkStructural(t, in, want, forms)

		// As the api_key of an ISO URL.
		in = "GET https://ais.example.com/images/x?api_key=" + url.QueryEscape(secret) + "&arch=x86_64: EOF"
		want = "GET https://ais.example.com/images/x?REDACTED: EOF"
		checkStructural(t, in, want, forms)
	})
}

// checkStructural asserts the exact redacted text: the output is then the fixed text around the secret
// plus the mask, so no form of the secret can be in it (unless it is a piece of that fixed text, such as
// "E" or "://", which is no leak).
func checkStructural(t *testing.T, in, want string, forms []string) {
	t.Helper()
	got := redact.String(in)
	if got != want {
		t.Fatalf("String(%q)\n got %q\nwant %q", in, got, want)
	}
	for _, form := range forms {
		if strings.Contains(got, form) && !strings.Contains(want, form) {
			t.Fatalf("secret form %q survives in %q", form, got)
		}
	}
}
