package conditions

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/equality"
)

// SameAsStored reports whether two statuses would be stored alike: semantically equal, or equal once
// serialized. The API server keeps times to the second; a status rebuilt in memory (the ISO cache's
// checkedAt, say) differs from the stored one only below that, and writing it would change nothing
// but cost a write on every pass.
func SameAsStored(a, b any) bool {
	if equality.Semantic.DeepEqual(a, b) {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
