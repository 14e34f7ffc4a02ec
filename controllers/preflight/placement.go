package preflight

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/redact"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// placementRecheckInterval is how often a pool's placement is resolved again without a spec change
// (objects renamed or removed in vCenter behind the operator's back).
const placementRecheckInterval = 10 * time.Minute

// placementChecks remembers, per pool UID (see placementMemoKey), the generation and time of the last
// placement check. The zero value is ready.
type placementChecks struct {
	mu   sync.Mutex
	last map[string]placementCheck
}

// placementCheck is the outcome of one check: reason and message are empty when it passed. The verdict
// is kept here, not read back from status: a pass whose status write was lost must still block.
type placementCheck struct {
	generation      int64
	at              time.Time
	reason, message string
}

// due returns the last check of pool key when it still holds for generation at now.
func (p *placementChecks) due(key string, generation int64, now time.Time) (placementCheck, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	return last, !ok || last.generation != generation || now.Sub(last.at) >= placementRecheckInterval
}

func (p *placementChecks) done(key string, c placementCheck) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]placementCheck{}
	}
	// Verdicts older than a recheck are never used again (deleted pools leave theirs behind): drop them.
	for k, v := range p.last {
		if c.at.Sub(v.at) > 2*placementRecheckInterval {
			delete(p.last, k)
		}
	}
	p.last[key] = c
}

// placementMemoKey keys a pool's placement verdict by its UID (the generation is compared by due): a pool
// deleted and created again under the same name starts at generation 1 again and must be checked afresh,
// never inherit the verdict of its predecessor.
func placementMemoKey(p *afv1.VsphereAgentPool) string {
	return client.ObjectKeyFromObject(p).String() + "/placement/" + string(p.UID)
}

const placementValidMessage = "every object named in spec.vsphere (and the hardware profile's datastores and storage policy) exists and is of the right kind"

// placementReason maps the first problem to the PlacementValid reason.
func placementReason(problems []vsphere.PlacementProblem) string {
	switch problems[0].Kind {
	case vsphere.PlacementDatacenter:
		return afv1.ReasonDatacenterNotFound
	case vsphere.PlacementDatastore:
		return afv1.ReasonDatastoreNotFound
	case vsphere.PlacementISODatastore:
		return afv1.ReasonISODatastoreNotFound
	case vsphere.PlacementResourcePool:
		return afv1.ReasonResourcePoolNotFound
	case vsphere.PlacementFolder:
		return afv1.ReasonFolderNotFound
	case vsphere.PlacementNetwork:
		return afv1.ReasonNetworkNotFound
	case vsphere.PlacementStoragePolicy:
		return afv1.ReasonStoragePolicyNotFound
	}
	return afv1.ReasonTagNotFound
}

// checkDomainPlacements resolves the placement of every failure domain of the pool; a problem names its
// domain (when the pool has failure domains).
func checkDomainPlacements(ctx context.Context, vs vsphere.Client, pool *afv1.VsphereAgentPool) ([]vsphere.PlacementProblem, error) {
	var all []vsphere.PlacementProblem
	seen := sets.New[string]()
	for _, d := range poolspec.Domains(pool) {
		problems, err := vs.CheckPlacement(ctx, poolspec.PlacementSpec(pool, d))
		if err != nil {
			return nil, err
		}
		for _, pr := range problems {
			if d.Name != "" {
				pr.Message = poolspec.DomainLabel(d.Name) + ": " + pr.Message
			}
			if !seen.Has(pr.Message) {
				seen.Insert(pr.Message)
				all = append(all, pr)
			}
		}
	}
	return all, nil
}

// checkPlacement is the pool's preflight: before any VsphereAgent is created, every object named in
// spec.vsphere is resolved in vCenter, once per spec generation and every placementRecheckInterval.
// Problems set PlacementValid=False with a reason per kind, a rate-limited Warning Event, and block
// creation until a later check passes. A placement that resolves is then checked for privileges
// (checkPrivileges).
func (c *Checker) checkPlacement(ctx context.Context, s *pass) error {
	p := s.pool
	if s.vs == nil || p.Spec.Paused {
		return nil // VSphereReachable says why
	}
	key := client.ObjectKeyFromObject(p).String()
	memo := placementMemoKey(p)
	now := c.Clock.Now()
	if last, due := c.placement.due(memo, p.Generation, now); !due {
		if last.reason != "" {
			s.preflightBlock = last.reason
			conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPlacementValid, false, last.reason, last.message, p.Generation)
		} else {
			conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPlacementValid, true, afv1.ReasonPlacementValid, placementValidMessage, p.Generation)
		}
		s.requeueAfter(placementRecheckInterval)
		if last.reason != "" {
			return nil
		}
		return c.checkPrivileges(ctx, s)
	}
	problems, err := checkDomainPlacements(ctx, s.vs, p)
	if err != nil {
		// vCenter could not be asked: unknown, not invalid. Nothing is created until it is known.
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPlacementValid, false, afv1.ReasonPlacementUnchecked,
			"the placement could not be checked: "+redact.String(err.Error()), p.Generation)
		s.preflightBlock = afv1.ReasonPlacementUnchecked
		s.requeueAfter(time.Minute)
		return nil
	}
	s.requeueAfter(placementRecheckInterval)
	topic := key + "/placement"
	if len(problems) == 0 {
		c.placement.done(memo, placementCheck{generation: p.Generation, at: now})
		c.Events.Clear(topic)
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPlacementValid, true, afv1.ReasonPlacementValid, placementValidMessage, p.Generation)
		return c.checkPrivileges(ctx, s)
	}
	msgs := make([]string, 0, len(problems))
	for _, pr := range problems {
		msgs = append(msgs, pr.Message)
	}
	reason := placementReason(problems)
	msg := fmt.Sprintf("spec.vsphere does not resolve in vCenter: %s; no VM is created", strings.Join(msgs, "; "))
	c.placement.done(memo, placementCheck{generation: p.Generation, at: now, reason: reason, message: msg})
	s.preflightBlock = reason
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPlacementValid, false, reason, msg, p.Generation)
	if c.Events.Allow(topic, reason, now) {
		c.Recorder.Eventf(p, nil, "Warning", reason, events.ActionPreflight, "%s", msg)
	}
	return nil
}
