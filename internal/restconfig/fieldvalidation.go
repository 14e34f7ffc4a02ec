// Package restconfig adjusts client rest.Configs.
package restconfig

import (
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// WithFieldValidation makes every write (POST, PUT, PATCH) sent through cfg carry the fieldValidation
// directive (Strict, Warn or Ignore), unless the request already names one. The transport level
// covers every client built from cfg: controller-runtime clients, clientsets and the event recorder.
// An empty directive leaves cfg unchanged (the API server's default, Warn).
//
// Tests use Strict so that a write of a field the served schema does not declare fails instead of
// being pruned silently, as a real hub would prune it.
func WithFieldValidation(cfg *rest.Config, directive string) error {
	switch directive {
	case "":
		return nil
	case metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore:
	default:
		return fmt.Errorf("field validation %q: want %s, %s or %s", directive,
			metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore)
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return fieldValidationTransport{next: rt, directive: directive}
	})
	return nil
}

type fieldValidationTransport struct {
	next      http.RoundTripper
	directive string
}

func (t fieldValidationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return t.next.RoundTrip(req)
	}
	q := req.URL.Query()
	if q.Get("fieldValidation") != "" {
		return t.next.RoundTrip(req)
	}
	// RoundTrippers must not modify the caller's request.
	req = req.Clone(req.Context())
	q.Set("fieldValidation", t.directive)
	req.URL.RawQuery = q.Encode()
	return t.next.RoundTrip(req)
}
