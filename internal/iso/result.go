package iso

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// maxHistory mirrors the CRD's MaxItems on status.iso.history.
const maxHistory = 50

// result turns a refresh outcome into the new status, condition and events.
func (run *refreshRun) result(outcome Outcome, err error) RefreshResult {
	st := *run.req.Status.DeepCopy()
	res := RefreshResult{Outcome: outcome}
	if err != nil {
		reason := afv1.ReasonDownloadFailed
		var f *refreshFailure
		if errors.As(err, &f) {
			reason = f.reason
		}
		res.Outcome = OutcomeFailed
		res.Err = err
		st.LastError = truncate(fmt.Sprintf("%s %s: %s", run.now.UTC().Format(lastErrorTimeFormatUTC), reason, err.Error()), maxLastErrorLength)
		msg := err.Error()
		if st.Path != "" {
			msg += "; new VMs keep using the cached ISO " + st.Path
		}
		res.Condition = metav1.Condition{Type: afv1.ConditionISOReady, Status: metav1.ConditionFalse, Reason: reason, Message: truncate(msg, 4096)}
		res.Events = append(res.Events, warning(afv1.ReasonISORefreshFailed, "%s: %s", reason, truncate(err.Error(), 1024)))
		res.Status = st
		run.log.Error(err, "discovery ISO refresh failed", "reason", reason)
		return res
	}

	now := metav1.NewTime(run.now)
	st.URL = RedactURL(run.req.Source.URL)
	st.URLHash = URLHash(run.req.Source.URL)
	st.CheckedAt = &now
	if run.req.Source.CreatedTime != nil {
		st.SourceCreatedTime = run.req.Source.CreatedTime.DeepCopy()
	} else {
		st.SourceCreatedTime = nil
	}
	st.ETag, st.LastModified = run.etag, run.lastModified
	st.ForceRefreshToken = run.req.ForceToken
	if run.req.PreviousReady == nil || !IsFailureReason(run.req.PreviousReady.Reason) {
		st.LastError = ""
	}
	entry := run.entry
	st.Path, st.SHA256, st.SizeBytes, st.UploadedAt = entry.Path, entry.SHA256, entry.SizeBytes, entry.UploadedAt
	st.History = prependVersion(st.History, entry)

	msg := fmt.Sprintf("discovery ISO %s cached at %s", short(entry.SHA256), entry.Path)
	if st.LastError != "" {
		msg += "; the previous refresh failed (status.iso.lastError)"
	}
	res.Condition = metav1.Condition{Type: afv1.ConditionISOReady, Status: metav1.ConditionTrue, Reason: afv1.ReasonCached, Message: msg}
	switch outcome {
	case OutcomeUploaded:
		res.Events = append(res.Events, normal(afv1.ReasonISOUploaded, "cached discovery ISO %s (%d bytes) at %s", short(entry.SHA256), entry.SizeBytes, entry.Path))
	case OutcomeReused:
		res.Events = append(res.Events, normal(afv1.ReasonISOReused, "discovery ISO %s already cached at %s; reused it", short(entry.SHA256), entry.Path))
	}
	res.Status = st
	return res
}

// prependVersion puts v first (newest) and drops any older entry with the same path, keeping a
// pending pruneError of that path out (it is active again).
func prependVersion(history []afv1.ISOVersion, v afv1.ISOVersion) []afv1.ISOVersion {
	out := make([]afv1.ISOVersion, 0, len(history)+1)
	out = append(out, v)
	for _, h := range history {
		if h.Path != v.Path {
			out = append(out, h)
		}
	}
	if len(out) > maxHistory {
		out = out[:maxHistory]
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
