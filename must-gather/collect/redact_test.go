package main

import "testing"

func TestScrubText(t *testing.T) {
	for in, want := range map[string]string{
		"GET https://image.example/images/x/minimal.iso?api_key=abc.def&arch=x86_64: 401": "GET https://image.example/images/x/minimal.iso?REDACTED: 401",
		"proxy http://user:secret@proxy.example:3128 refused":                             "proxy http://REDACTED@proxy.example:3128 refused",
		"token " + isoToken + " expired":                                                  "token REDACTED expired",
		"Authorization: Bearer sha256~abcdefghijklmnop":                                   "Authorization: Bearer REDACTED",
		`{"password":"hunter2hunter2","user":"a"}`:                                        `{"password":"REDACTED","user":"a"}`,
		"password: REDACTED":                                                              "password: REDACTED",
		// Names and prose stay readable.
		"vsphereagentpools.agent-forge.containeroo.ch workers is Ready":   "vsphereagentpools.agent-forge.containeroo.ch workers is Ready",
		"https://assisted-image-service.apps.hub.example/images/demo.iso": "https://assisted-image-service.apps.hub.example/images/demo.iso",
		"the pool has no token yet":                                       "the pool has no token yet",
	} {
		if got := scrubText(in); got != want {
			t.Errorf("scrubText(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestRedactSecretDocuments(t *testing.T) {
	in := "kind: ConfigMap\ndata:\n  a: b\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  k: dmFsdWU=\n"
	got := string(redactSecretDocuments([]byte(in)))
	want := "kind: ConfigMap\ndata:\n  a: b\n---\napiVersion: v1\ndata:\n  k: REDACTED\nkind: Secret\nmetadata:\n  name: s\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
