package iso

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// validPrefix is what the CRD admits for spec.iso.pathPrefix: [A-Za-z0-9._/-]*, no leading '/', no
// "..", at most 200 characters.
var validPrefix = regexp.MustCompile(`^[A-Za-z0-9._/-]*$`)

func admittedPrefix(p string) bool {
	return len(p) <= 200 && validPrefix.MatchString(p) && !strings.HasPrefix(p, "/") && !strings.Contains(p, "..")
}

// admittedDatastore: a non-empty name the "[datastore] path" notation can carry (govmomi's own
// DatastorePath parser, like ours, ends the name at the first ']'; a line break is no name either).
func admittedDatastore(ds string) bool {
	return ds != "" && len(ds) <= 255 && !strings.ContainsAny(ds, "]\n")
}

func poolWithPrefix(prefix string) *afv1.VsphereAgentPool {
	p := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "workers"}}
	p.Spec.ISO.PathPrefix = prefix
	return p
}

// FuzzCachedISOPath checks the content-addressed ISO path, the guard before every prune (delete) and
// every CD-ROM ejection:
//
//   - round trip: for every datastore and admitted prefix, the path CachedISOPath formats for a SHA-256
//     is recognised by IsCachedISOPath for that datastore and prefix, and is not a temporary upload;
//     the same path is refused for another datastore, another prefix, and with the digest upper-cased,
//     truncated or extended;
//   - PathPrefix is clean (no leading/trailing '/', path.Clean'd), idempotent, and the default when empty;
//   - any string p accepted by IsCachedISOPath (or isTempPath) is exactly the canonical path
//     CachedISOPath (DatastorePath) formats for its file name: nothing else, e.g. "dir/../prefix",
//     "prefix//x", "prefix/./x", a second space or another datastore, is ever treated as ours;
//   - a name is never both a cached ISO and a temporary upload.
func FuzzCachedISOPath(f *testing.F) {
	sum := strings.Repeat("ab", 32)
	f.Add("LocalDS_0", "agent-forge/clusters/workers", []byte("discovery"), "[LocalDS_0] agent-forge/clusters/workers/"+sum+".iso")
	f.Add("datastore 1", "", []byte{}, "[datastore 1] agent-forge/clusters/workers/incoming-"+strings.Repeat("0f", 16)+".iso")
	f.Add("ds", "isos/", []byte{1}, "[ds] isos/incoming-"+strings.Repeat("0f", 16)+".iso.upload-1a2b.tmp")
	f.Add("ds", "a/c", []byte{2}, "[ds] a/b/../c/"+sum+".iso")
	f.Add("ds", "a/c", []byte{3}, "[ds] a//c/"+sum+".iso")
	f.Add("ds", "a/c", []byte{4}, "[ds] a/c/./"+sum+".iso")
	f.Add("ds", ".", []byte{5}, "[ds] "+sum+".iso")
	f.Add("ds", "a", []byte{6}, "[ds]  a/"+sum+".iso")
	f.Add("d]s", "a", []byte{7}, "[d]s] a/"+sum+".iso")
	f.Fuzz(func(t *testing.T, ds, specPrefix string, content []byte, p string) {
		if !admittedPrefix(specPrefix) {
			return
		}
		prefix := PathPrefix(poolWithPrefix(specPrefix))
		if prefix == "" || strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") || path.Clean(prefix) != prefix {
			t.Fatalf("PathPrefix(%q) = %q: not a clean relative folder", specPrefix, prefix)
		}
		if again := PathPrefix(poolWithPrefix(prefix)); again != prefix {
			t.Fatalf("PathPrefix not idempotent: %q -> %q -> %q", specPrefix, prefix, again)
		}
		if strings.Trim(specPrefix, "/") == "" && prefix != "agent-forge/clusters/workers" {
			t.Fatalf("empty prefix %q gave %q, want the default", specPrefix, prefix)
		}

		if admittedDatastore(ds) {
			h := sha256Hex(content)
			cached := CachedISOPath(ds, prefix, h)
			if want := "[" + ds + "] " + path.Join(prefix, h+".iso"); cached != want {
				t.Fatalf("CachedISOPath = %q, want %q", cached, want)
			}
			if !IsCachedISOPath(cached, ds, prefix) {
				t.Fatalf("IsCachedISOPath(%q, %q, %q) = false for the path it formats", cached, ds, prefix)
			}
			if isTempPath(cached, ds, prefix) {
				t.Fatalf("cached path %q taken for a temporary upload", cached)
			}
			if IsCachedISOPath(cached, ds+"x", prefix) || IsCachedISOPath(cached, ds, path.Join(prefix, "other")) ||
				(prefix != "." && IsCachedISOPath(cached, ds, path.Dir(prefix))) {
				t.Fatalf("%q accepted for another datastore or prefix", cached)
			}
			for _, bad := range []string{strings.ToUpper(h), h[1:], h + "0"} {
				if bad != h && IsCachedISOPath(CachedISOPath(ds, prefix, bad), ds, prefix) {
					t.Fatalf("digest %q accepted as a content address", bad)
				}
			}
			tmp, err := newTempPath(ds, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if !isTempPath(tmp, ds, prefix) || IsCachedISOPath(tmp, ds, prefix) {
				t.Fatalf("temporary path %q not recognised as exactly a temporary upload", tmp)
			}
		}

		// Arbitrary p: accepted only in the exact canonical form.
		isCached, isTemp := IsCachedISOPath(p, ds, prefix), isTempPath(p, ds, prefix)
		if isCached && isTemp {
			t.Fatalf("%q is both a cached ISO and a temporary upload", p)
		}
		if isCached || isTemp {
			file := p[strings.LastIndexAny(p, "/ ")+1:]
			if canon := DatastorePath(ds, prefix, file); p != canon {
				t.Fatalf("%q accepted (cached %t, temp %t) for [%s] %s, but the canonical path is %q", p, isCached, isTemp, ds, prefix, canon)
			}
			if isCached && p != CachedISOPath(ds, prefix, strings.TrimSuffix(file, ".iso")) {
				t.Fatalf("%q accepted, not the content address it names", p)
			}
		}
	})
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
