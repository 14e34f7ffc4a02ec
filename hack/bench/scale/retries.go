package main

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reconcileErrors is the controllers' logger in the bench: it drops every line but controller-runtime's
// "Reconciler error", which it counts by controller and normalised error message, so the bench can say
// where the workqueue retries come from.
type reconcileErrors struct {
	mu     sync.Mutex
	counts map[errorCause]int
}

type errorCause struct{ controller, message string }

func newReconcileErrors() *reconcileErrors { return &reconcileErrors{counts: map[errorCause]int{}} }

// logger is a logr.Logger that feeds r.
func (r *reconcileErrors) logger() logr.Logger { return logr.New(errorSink{r: r}) }

func (r *reconcileErrors) add(controller string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[errorCause{controller, normaliseError(err)}]++
}

func (r *reconcileErrors) snapshot() map[errorCause]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[errorCause]int, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

// errorSink is the logr.LogSink behind reconcileErrors.logger; it keeps the "controller" value.
type errorSink struct {
	r          *reconcileErrors
	controller string
}

func (errorSink) Init(logr.RuntimeInfo)          {}
func (errorSink) Enabled(int) bool               { return false }
func (errorSink) Info(int, string, ...any)       {}
func (s errorSink) WithName(string) logr.LogSink { return s }

func (s errorSink) WithValues(kv ...any) logr.LogSink {
	for i := 0; i+1 < len(kv); i += 2 {
		if k, _ := kv[i].(string); k == "controller" {
			s.controller, _ = kv[i+1].(string)
		}
	}
	return s
}

func (s errorSink) Error(err error, msg string, _ ...any) {
	if msg == "Reconciler error" && err != nil {
		s.r.add(s.controller, err)
	}
}

// Names, UIDs and counts vary per object; the cause is the message without them.
var (
	quotedRE = regexp.MustCompile(`"[^"]*"`)
	uuidRE   = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	idRE     = regexp.MustCompile(`[A-Za-z0-9_.:/-]*[0-9][A-Za-z0-9_.:/-]*`)
)

func normaliseError(err error) string {
	m := strings.ReplaceAll(err.Error(), "\n", "; ")
	m = quotedRE.ReplaceAllString(m, `"…"`)
	m = uuidRE.ReplaceAllString(m, "<uid>")
	m = idRE.ReplaceAllString(m, "<id>")
	if len(m) > 200 {
		m = m[:200] + "…"
	}
	return m
}

// retryReport reads, per controller, the workqueue retries and reconciles by result from the
// in-process registry. A retry is every delayed add: an error or Requeue (rate-limited) and also a
// RequeueAfter; the results tell them apart.
type retryReport struct {
	retries map[string]int            // controller key ("pool", "vm") -> workqueue_retries_total
	results map[string]map[string]int // controller key -> result label -> controller_runtime_reconcile_total
	causes  map[errorCause]int
	// requests are the pools' VsphereAgent creations and releases (agent_forge_pool_vm_requests_total by action).
	requests map[string]int
}

func readRetries(g prometheus.Gatherer, errs *reconcileErrors) retryReport {
	rep := retryReport{retries: map[string]int{}, results: map[string]map[string]int{}, causes: errs.snapshot(), requests: map[string]int{}}
	families, err := g.Gather()
	if err != nil {
		return rep
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "agent_forge_pool_vm_requests_total" {
				for _, l := range m.GetLabel() {
					if l.GetName() == "action" {
						rep.requests[l.GetValue()] += int(m.GetCounter().GetValue())
					}
				}
			}
			for key, ctl := range controllerNames {
				if !hasLabel(m, ctl) {
					continue
				}
				switch f.GetName() {
				case "workqueue_retries_total":
					rep.retries[key] += int(m.GetCounter().GetValue())
				case "controller_runtime_reconcile_total":
					if rep.results[key] == nil {
						rep.results[key] = map[string]int{}
					}
					for _, l := range m.GetLabel() {
						if l.GetName() == "result" {
							rep.results[key][l.GetValue()] += int(m.GetCounter().GetValue())
						}
					}
				}
			}
		}
	}
	return rep
}

// since is the report of what happened after before.
func (r retryReport) since(before retryReport) retryReport {
	out := retryReport{retries: map[string]int{}, results: map[string]map[string]int{}, causes: map[errorCause]int{}, requests: map[string]int{}}
	for k, v := range r.requests {
		out.requests[k] = v - before.requests[k]
	}
	for k, v := range r.retries {
		out.retries[k] = v - before.retries[k]
	}
	for k, byResult := range r.results {
		out.results[k] = map[string]int{}
		for res, v := range byResult {
			out.results[k][res] = v - before.results[k][res]
		}
	}
	for k, v := range r.causes {
		if d := v - before.causes[k]; d > 0 {
			out.causes[k] = d
		}
	}
	return out
}

// log prints "retries: <n> (pool <a>, vm <b>)", the reconciles by result and the errors by cause.
func (r retryReport) log(vms int) {
	total := r.retries["pool"] + r.retries["vm"]
	sum := func(result string) int { return r.results["pool"][result] + r.results["vm"][result] }
	logf("retries: %d (pool %d, vm %d), %.2f/VM: rate-limited %d (errors %d, requeue %d), timers %d (RequeueAfter)",
		total, r.retries["pool"], r.retries["vm"], float64(total)/float64(max(vms, 1)),
		sum("error")+sum("requeue"), sum("error"), sum("requeue"), sum("requeue_after"))
	logf("reconciles by result: pool %s; vm %s", resultLine(r.results["pool"]), resultLine(r.results["vm"]))
	causes := make([]errorCause, 0, len(r.causes))
	for c := range r.causes {
		causes = append(causes, c)
	}
	sort.Slice(causes, func(i, j int) bool {
		a, b := causes[i], causes[j]
		return r.causes[a] > r.causes[b] || (r.causes[a] == r.causes[b] && a.controller+a.message < b.controller+b.message)
	})
	if len(causes) == 0 {
		logf("reconcile errors by cause: none")
	} else {
		logf("reconcile errors by cause:")
	}
	for _, c := range causes {
		logf("  %6d  %-16s %s", r.causes[c], c.controller, c.message)
	}
}

func resultLine(byResult map[string]int) string {
	keys := make([]string, 0, len(byResult))
	for k := range byResult {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, byResult[k]))
	}
	return strings.Join(parts, " ")
}

// reconcileErrs counts the in-process controllers' reconcile errors (main installs its logger).
var reconcileErrs = newReconcileErrors()

// logSurplus names the VsphereAgents created beyond the demand (want) and released again while
// provisioning, with the reasons of the pools' VMReleased and SurplusKept Events.
func (r retryReport) logSurplus(ctx context.Context, c client.Client, want int) {
	logf("VsphereAgents created %d for %d AgentMachines, released %d", r.requests["create"], want, r.requests["release"])
	if r.requests["release"] == 0 {
		return
	}
	var events corev1.EventList
	if err := c.List(ctx, &events); err != nil {
		logf("listing Events: %v", err)
		return
	}
	// The creations of a pool that released a VM show the demand each batch was made for.
	releasing := map[string]bool{}
	for _, e := range events.Items {
		if e.Reason == "VMReleased" || e.Reason == "SurplusKept" {
			releasing[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name] = true
		}
	}
	sort.Slice(events.Items, func(i, j int) bool { return eventTime(events.Items[i]).Before(eventTime(events.Items[j])) })
	for _, e := range events.Items {
		pool := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		if releasing[pool] && (e.Reason == "VMReleased" || e.Reason == "SurplusKept") {
			logf("  %s %s %s: %s", eventTime(e).Format("15:04:05.000"), e.Reason, pool, e.Message)
		}
	}
}

// eventTime is when an Event was last seen (events.k8s.io writes eventTime, the core API lastTimestamp).
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
