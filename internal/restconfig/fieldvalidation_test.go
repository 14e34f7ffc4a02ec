package restconfig

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

func TestWithFieldValidation(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Query().Get("fieldValidation"))
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name      string
		directive string
		method    string
		query     string
		want      string
	}{
		{"create gets Strict", "Strict", http.MethodPost, "", "POST Strict"},
		{"update gets Strict", "Strict", http.MethodPut, "", "PUT Strict"},
		{"patch gets Strict", "Strict", http.MethodPatch, "", "PATCH Strict"},
		{"reads are untouched", "Strict", http.MethodGet, "", "GET "},
		{"deletes are untouched", "Strict", http.MethodDelete, "", "DELETE "},
		{"a request's own directive wins", "Strict", http.MethodPost, "?fieldValidation=Ignore", "POST Ignore"},
		{"empty keeps the server default", "", http.MethodPost, "", "POST "},
		{"Warn", "Warn", http.MethodPatch, "", "PATCH Warn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			cfg := &rest.Config{Host: srv.URL}
			if err := WithFieldValidation(cfg, tc.directive); err != nil {
				t.Fatal(err)
			}
			rt, err := rest.TransportFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(tc.method, srv.URL+"/apis/x/v1/things"+tc.query, nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("server saw %q, want %q", got, tc.want)
			}
			if req.URL.RawQuery != tc.query[min(1, len(tc.query)):] {
				t.Errorf("the caller's request was modified: %q", req.URL.RawQuery)
			}
		})
	}
	if err := WithFieldValidation(&rest.Config{}, "strict"); err == nil {
		t.Error("a misspelt directive was accepted")
	}
}
