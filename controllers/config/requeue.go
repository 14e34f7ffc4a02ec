package config

import (
	"time"
)

// StatusConflictRequeue is how soon a VsphereAgent is looked at again after its status write met a
// conflict (a newer object arrived), when the pass asked for no requeue of its own. The newer object's
// watch event normally triggers the next pass first; this is the fallback. (It replaces
// ctrl.Result{Requeue: true}, deprecated by controller-runtime, which waited the VM rate limiter's backoff:
// 5 ms plus jitter, doubling with each consecutive retry of the object.)
const StatusConflictRequeue = 100 * time.Millisecond
