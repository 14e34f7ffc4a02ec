package rbac

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
)

// access is one (API group, resource[/subresource], verb) triple, the unit RBAC grants.
type access struct{ group, resource, verb string }

func (a access) String() string {
	g := a.group
	if g == "" {
		g = "core"
	}
	return fmt.Sprintf("%s %s/%s", a.verb, g, a.resource)
}

// recorder sees every request the operator sends to the API server and what the server answered.
type recorder struct {
	cut       context.Context // ends when the run is over (cutOff)
	cutOff    context.CancelFunc
	mu        sync.Mutex
	used      map[access]int
	forbidden []string // "verb group/resource: message", in order
}

func newRecorder() *recorder {
	r := &recorder{used: map[access]int{}}
	r.cut, r.cutOff = context.WithCancel(context.Background())
	return r
}

// errCutOff is what a manager gets from the API server once its run is over.
var errCutOff = errors.New("rbac test: this manager's run is over")

// wrap installs the recorder on a rest.Config (every client the manager builds from it). After cutOff the
// manager's requests fail and its open watches end: a manager refused a list/watch cannot be stopped
// (controller-runtime waits for its cache first), and must not keep the API server busy afterwards.
func (r *recorder) wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if r.cut.Err() != nil {
				return nil, errCutOff
			}
			ctx, cancel := context.WithCancel(req.Context())
			stop := context.AfterFunc(r.cut, cancel)
			resp, err := rt.RoundTrip(req.WithContext(ctx))
			if err != nil || resp == nil {
				stop()
				cancel()
				return resp, err
			}
			// The body of a watch outlives RoundTrip: release the context when it is closed.
			resp.Body = &bodyCloser{ReadCloser: resp.Body, done: func() { stop(); cancel() }}
			a, ok := parseAccess(req)
			if !ok || err != nil {
				return resp, err
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.used[a]++
			if resp.StatusCode == http.StatusForbidden {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				_ = resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(body))
				r.forbidden = append(r.forbidden, fmt.Sprintf("%s: %s", a, strings.TrimSpace(string(body))))
			}
			return resp, err
		})
	})
}

func (r *recorder) forbiddenRequests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.forbidden...)
}

func (r *recorder) wasUsed(a access) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used[a] > 0
}

func (r *recorder) usedList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for a, n := range r.used {
		out = append(out, fmt.Sprintf("%s (%d)", a, n))
	}
	sort.Strings(out)
	return out
}

type bodyCloser struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *bodyCloser) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// parseAccess maps a request to the RBAC triple the API server authorizes it as. Discovery and other
// non-resource requests report false.
//
//	/api/v1/namespaces/ns/secrets/name          -> get core/secrets
//	/apis/g/v/namespaces/ns/kind/name/status    -> patch g/kind/status (PATCH)
//	/apis/g/v/kind?watch=true                   -> watch g/kind
func parseAccess(req *http.Request) (access, bool) {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var group string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		group, segs = segs[1], segs[3:]
	default:
		return access{}, false
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:] // namespaced resource
	}
	resource, name := segs[0], ""
	if len(segs) >= 2 {
		name = segs[1]
	}
	if len(segs) >= 3 {
		resource += "/" + segs[2]
	}
	var verb string
	switch req.Method {
	case http.MethodGet:
		switch {
		case name != "":
			verb = "get"
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "watch"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if name == "" {
			verb = "deletecollection"
		}
	default:
		return access{}, false
	}
	return access{group, resource, verb}, true
}

// grants expands rules into the triples they allow (rules in the CSV name no wildcards, resourceNames
// or nonResourceURLs; a test below keeps it so).
func grants(rules []rbacv1.PolicyRule) []access {
	var out []access
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, access{g, res, v})
				}
			}
		}
	}
	return out
}
