package iso

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

var (
	// cachedName is the only file name Prune ever deletes: a content-addressed ISO.
	cachedName = regexp.MustCompile(`^[0-9a-f]{64}\.iso$`)
	// tempName is the name of our in-flight uploads (and of the vSphere client's own temporary file
	// for one, "<name>.upload-<hex>.tmp", which releases before UploadFile wrote); stale ones are
	// cleaned up by Prune.
	tempName = regexp.MustCompile(`^incoming-[0-9a-f]{32}\.iso(\.upload-[0-9a-f]+\.tmp)?$`)
	// upstreamPartialName is the in-flight upload of upstream agent-forge-operator's later releases:
	// "<sha256>.iso.<temp dir name>.partial", moved into place once verified. A crash leaves it behind.
	upstreamPartialName = regexp.MustCompile(`^[0-9a-f]{64}\.iso\.[A-Za-z0-9._-]+\.partial$`)
	// datastorePath splits "[ds] dir/file".
	datastorePath = regexp.MustCompile(`^\[([^\]]+)\] (.+)$`)
)

// PathPrefix is the pool's datastore folder for cached ISOs: spec.iso.pathPrefix, or
// agent-forge/<namespace>/<pool> when empty. Leading/trailing slashes are dropped.
func PathPrefix(pool *afv1.VsphereAgentPool) string {
	p := strings.Trim(pool.Spec.ISO.PathPrefix, "/")
	if p == "" {
		p = path.Join("agent-forge", pool.Namespace, pool.Name)
	}
	return path.Clean(p)
}

// DatastorePath formats "[datastore] prefix/name".
func DatastorePath(datastore, prefix, name string) string {
	return fmt.Sprintf("[%s] %s", datastore, path.Join(prefix, name))
}

// CachedISOPath is the content-addressed path of an ISO with the given SHA-256.
func CachedISOPath(datastore, prefix, sha256Hex string) string {
	return DatastorePath(datastore, prefix, sha256Hex+".iso")
}

// IsCachedISOPath reports whether p is "[datastore] prefix/<64 hex>.iso" exactly: the guard before
// any deletion and before ejecting a CD-ROM.
func IsCachedISOPath(p, datastore, prefix string) bool {
	return isUnderPrefix(p, datastore, prefix, cachedName)
}

func isTempPath(p, datastore, prefix string) bool {
	return isUnderPrefix(p, datastore, prefix, tempName)
}

func isUnderPrefix(p, datastore, prefix string, name *regexp.Regexp) bool {
	m := datastorePath.FindStringSubmatch(p)
	if m == nil || m[1] != datastore {
		return false
	}
	// Exactly the canonical "prefix/name" (as DatastorePath formats it): a lexically equivalent spelling
	// ("dir/../prefix/x", "prefix//x", "prefix/./x") is not ours, since ".." or "." may resolve elsewhere
	// on a datastore (e.g. vSAN namespace links).
	_, file := path.Split(m[2])
	return m[2] == path.Join(prefix, file) && name.MatchString(file)
}

// newTempPath names a fresh in-flight upload under the prefix.
func newTempPath(datastore, prefix string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return DatastorePath(datastore, prefix, "incoming-"+hex.EncodeToString(b[:])+".iso"), nil
}

// UpstreamHistoryPath converts a history path written by upstream agent-forge-operator ("prefix/<sha256>.iso",
// without the "[datastore] " of ours; it uploads to the same spec.vsphere.isoDatastore) into ours, when it
// names a content-addressed file directly in this pool's ISO folder whose name matches the recorded digest
// (sha256 may be empty). Anything else is not ours to prune: ok is false.
func UpstreamHistoryPath(p, sha256Hex, datastore, prefix string) (string, bool) {
	if strings.HasPrefix(p, "[") {
		return "", false // already a datastore path (ours)
	}
	rel := strings.TrimPrefix(p, "/")
	_, file := path.Split(rel)
	if rel != path.Join(prefix, file) || !cachedName.MatchString(file) {
		return "", false
	}
	if sha256Hex != "" && file != sha256Hex+".iso" {
		return "", false
	}
	return DatastorePath(datastore, prefix, file), true
}

// isUpstreamPartialPath reports whether p is an upstream upload left in the pool's ISO folder.
func isUpstreamPartialPath(p, datastore, prefix string) bool {
	return isUnderPrefix(p, datastore, prefix, upstreamPartialName)
}

// PoolISOPath is the datastore path of the pool's cached discovery ISO as a VM's CD-ROM takes it ("" when
// none): StatusPath of status.iso.
func PoolISOPath(pool *afv1.VsphereAgentPool) string { return StatusPath(pool, pool.Status.ISO) }

// StatusPath is st's path as a datastore path ("" when none): ours as stored, or one stored by upstream
// agent-forge-operator (no "[datastore] "; it uploads to the same spec.vsphere.isoDatastore) converted
// to ours. A bare path that is not upstream's shape is no datastore path: "".
func StatusPath(pool *afv1.VsphereAgentPool, st *afv1.ISOStatus) string {
	if st == nil || st.Path == "" {
		return ""
	}
	if strings.HasPrefix(st.Path, "[") {
		return st.Path
	}
	if conv, ok := UpstreamHistoryPath(st.Path, st.SHA256, pool.Spec.VSphere.ISODatastore, PathPrefix(pool)); ok {
		return conv
	}
	return ""
}
