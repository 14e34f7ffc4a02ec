package iso

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// PruneRequest is one retention pass over a pool's cached ISOs.
type PruneRequest struct {
	Datacenter, Datastore, Prefix string
	// RetainVersions is spec.iso.retainVersions (defaulted when <= 0).
	RetainVersions int
	// Status is the pool's status.iso (usually a RefreshResult's Status).
	Status afv1.ISOStatus
}

// PruneResult is the retention pass's outcome: Status has the updated history.
type PruneResult struct {
	Status   afv1.ISOStatus
	Events   []Event
	Pruned   []string // deleted paths
	Deferred []string // kept: still attached to a VM
	Failed   []string // kept with pruneError: the check or the delete failed
}

// SelectPrunable returns the indexes into history (newest first) of the versions beyond the retain
// newest ones, never the active path. Pure.
func SelectPrunable(history []afv1.ISOVersion, activePath string, retain int) []int {
	if retain <= 0 {
		retain = DefaultRetainVersions
	}
	var out []int
	for i := retain; i < len(history); i++ {
		if history[i].Path != activePath {
			out = append(out, i)
		}
	}
	return out
}

// Prune keeps the retainVersions newest ISOs and deletes older ones that no VM in the datacenter
// has attached (asked of vSphere, so powered-off VMs and other pools' VMs count). A version in use
// is kept and retried on a later pass; a failed delete stays in history with pruneError. Only
// "<64 hex>.iso" files directly under the pool's prefix are ever deleted; history entries elsewhere
// (e.g. after a prefix change) are dropped from history and left on the datastore. Leftover
// temporary uploads older than the grace period are deleted too.
func (c *Cache) Prune(ctx context.Context, client vsphere.Client, req PruneRequest) PruneResult {
	st := *req.Status.DeepCopy()
	res := PruneResult{}
	log := c.log.WithValues("datastore", req.Datastore, "prefix", req.Prefix)
	st.History = convertUpstreamHistory(log, st.History, req.Datastore, req.Prefix)
	drop := map[int]bool{}
	for _, i := range SelectPrunable(st.History, st.Path, req.RetainVersions) {
		v := &st.History[i]
		if !IsCachedISOPath(v.Path, req.Datastore, req.Prefix) {
			log.Info("not pruning an ISO outside the pool's path prefix; forgetting it", "path", v.Path)
			drop[i] = true
			continue
		}
		vms, err := client.VMsWithISO(ctx, req.Datacenter, v.Path)
		if err != nil {
			c.pruneFailed(&res, v, fmt.Errorf("listing VMs with the ISO attached: %w", err))
			continue
		}
		if len(vms) > 0 {
			metrics.ObserveISOOperation(metrics.ISOOpPrune, metrics.ResultDeferred)
			res.Deferred = append(res.Deferred, v.Path)
			res.Events = append(res.Events, normal(afv1.ReasonISOPruneDeferred, "keeping %s: attached to %d VM(s) (%s)",
				v.Path, len(vms), strings.Join(firstN(vms, 5), ", ")))
			continue
		}
		if err := client.DeleteFile(ctx, req.Datacenter, v.Path); err != nil {
			c.pruneFailed(&res, v, err)
			continue
		}
		metrics.ObserveISOOperation(metrics.ISOOpPrune, metrics.ResultSuccess)
		res.Pruned = append(res.Pruned, v.Path)
		res.Events = append(res.Events, normal(afv1.ReasonISOPruned, "deleted cached ISO %s", v.Path))
		log.Info("pruned cached ISO", "path", v.Path)
		drop[i] = true
	}
	kept := st.History[:0:0]
	for i, v := range st.History {
		if !drop[i] {
			kept = append(kept, v)
		}
	}
	st.History = kept
	res.Status = st
	res.Events = append(res.Events, c.cleanTemps(ctx, client, req)...)
	return res
}

func (c *Cache) pruneFailed(res *PruneResult, v *afv1.ISOVersion, err error) {
	metrics.ObserveISOOperation(metrics.ISOOpPrune, metrics.ResultFailure)
	v.PruneError = truncate(err.Error(), 512)
	res.Failed = append(res.Failed, v.Path)
	res.Events = append(res.Events, warning(afv1.ReasonISOPruneFailed, "could not delete %s (will retry): %s", v.Path, v.PruneError))
	c.log.Error(err, "pruning cached ISO failed; will retry", "path", v.Path)
}

// cleanTemps deletes our own temporary uploads under the prefix that are older than the grace
// period (left by a crash mid-upload), and upstream's "<sha256>.iso.<tmp>.partial" ones as old that no
// VM has attached. Younger ones may belong to another pool sharing the prefix (or upstream still running).
func (c *Cache) cleanTemps(ctx context.Context, client vsphere.Client, req PruneRequest) []Event {
	dir := fmt.Sprintf("[%s] %s", req.Datastore, path.Clean(req.Prefix))
	files, err := client.ListFiles(ctx, req.Datacenter, dir)
	if err != nil {
		if !vsphere.IsNotFound(err) {
			c.log.Error(err, "listing the ISO folder for leftover uploads failed", "dir", dir)
		}
		return nil
	}
	var events []Event
	now := c.clock.Now()
	for _, f := range files {
		p := DatastorePath(req.Datastore, req.Prefix, f.Name)
		if f.Modified.IsZero() || now.Sub(f.Modified) < c.tempGrace {
			continue
		}
		switch {
		case isTempPath(p, req.Datastore, req.Prefix):
		case isUpstreamPartialPath(p, req.Datastore, req.Prefix):
			// Upstream never attaches one, but nothing on a datastore is deleted while a VM holds it.
			vms, err := client.VMsWithISO(ctx, req.Datacenter, p)
			if err != nil || len(vms) > 0 {
				c.log.Info("keeping a leftover upstream upload: attached to a VM, or the check failed", "path", p, "vms", len(vms), "error", errString(err))
				continue
			}
		default:
			continue
		}
		if err := client.DeleteFile(ctx, req.Datacenter, p); err != nil {
			c.log.Error(err, "deleting a leftover temporary ISO upload failed", "path", p)
			continue
		}
		events = append(events, normal(afv1.ReasonISOTempCleanedUp, "deleted leftover temporary upload %s", p))
	}
	return events
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

// convertUpstreamHistory rewrites history entries upstream agent-forge-operator wrote (no "[datastore] ")
// into ours when they name a file of this pool's folder (UpstreamHistoryPath), so retention prunes them
// like ours, after asking vCenter whether a VM still has them attached. Other upstream entries are
// dropped from history and never deleted: the file may be another pool's.
func convertUpstreamHistory(log logr.Logger, history []afv1.ISOVersion, datastore, prefix string) []afv1.ISOVersion {
	seen := sets.New[string]()
	for _, v := range history {
		seen.Insert(v.Path)
	}
	out := history[:0:0]
	for _, v := range history {
		if strings.HasPrefix(v.Path, "[") {
			out = append(out, v)
			continue
		}
		converted, ok := UpstreamHistoryPath(v.Path, v.SHA256, datastore, prefix)
		switch {
		case !ok:
			log.Info("dropping an upstream ISO history entry outside the pool's ISO folder; the file is left in place", "path", v.Path)
		case seen.Has(converted):
			// already recorded in our form
		default:
			log.Info("converted an upstream ISO history entry", "path", v.Path, "to", converted)
			v.Path = converted
			seen.Insert(converted)
			out = append(out, v)
		}
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
