package pool

import (
	"context"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// carryOut does what s.plan decided, in its order: remember the burst window, create VsphereAgents,
// release VMs (replacing outdated ones last), delete expired failures, scan for orphans, delete the
// Agents of VMs destroyed before they registered. A step that fails does not stop the others; every
// release re-checks the Agent live (a reservation wins).
func (r *Reconciler) carryOut(ctx context.Context, s *poolScope) error {
	p := &s.plan
	poolKey := client.ObjectKeyFromObject(s.pool).String()
	r.debounce.remember(poolKey, p.Burst)
	s.requeueAfter(p.RequeueAfter)

	var errs []error
	if err := r.createVsphereAgents(ctx, s, poolKey, p.Creates); err != nil {
		errs = append(errs, err)
	} else if p.CloseBurst {
		r.debounce.forget(poolKey) // the batch is out: the next burst opens a fresh window
	}
	for _, rel := range p.Releases {
		if rel.Replaces() {
			continue
		}
		if _, err := r.release(ctx, s, poolKey, rel.Name, rel.Message); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.replaceOutdated(ctx, s, poolKey); err != nil {
		errs = append(errs, err)
	}
	for _, name := range p.Expire {
		if va := s.vsphereAgent(name); va != nil {
			if err := r.Delete(ctx, va, client.Preconditions{UID: &va.UID}); client.IgnoreNotFound(err) != nil {
				errs = append(errs, err)
			}
		}
	}
	if p.ScanOrphans {
		if err := r.scanOrphans(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.deleteLateAgents(ctx, s); err != nil {
		errs = append(errs, err)
	}
	return kerrors.NewAggregate(errs)
}

// replaceOutdated releases the VMs the plan replaces for an outdated image (the plan already counts
// them as leaving, so demand creates their replacements from the current image); a concurrent
// reservation wins. The first failure ends the replacements of this pass.
func (r *Reconciler) replaceOutdated(ctx context.Context, s *poolScope, poolKey string) error {
	for _, rel := range s.plan.Releases {
		if !rel.Replaces() {
			continue
		}
		released, err := r.release(ctx, s, poolKey, rel.Name, rel.Message)
		if err != nil {
			return err
		}
		if released {
			r.Recorder.Eventf(s.pool, nil, "Normal", rel.Reason, events.ActionReplaceVM, "replacing VM %s: %s", rel.Name, rel.Message)
		}
	}
	return nil
}

// vsphereAgent returns the pool's listed VsphereAgent of that name (nil: not listed).
func (s *poolScope) vsphereAgent(name string) *afv1.VsphereAgent {
	for i := range s.vas {
		if s.vas[i].Name == name {
			return &s.vas[i]
		}
	}
	return nil
}

// createVsphereAgents creates one VsphereAgent named <namePrefix>-<random> per entry of domains, placed
// in that failure domain ("" without failure domains).
func (r *Reconciler) createVsphereAgents(ctx context.Context, s *poolScope, poolKey string, domains []string) error {
	prefix := poolspec.NamePrefix(s.pool)
	for _, domain := range domains {
		va := &afv1.VsphereAgent{}
		// Named here, not by generateName: when a create's response is lost the name is still known, so the
		// VsphereAgent that may exist is expected and not created twice (found by the chaos campaign).
		va.Name = prefix + "-" + utilrand.String(5)
		va.Namespace = s.pool.Namespace
		va.Labels = map[string]string{afv1.LabelPool: s.pool.Name}
		// Created with its finalizer: the VsphereAgent controller need not write it in a second request.
		va.Finalizers = []string{afv1.FinalizerVsphereAgent}
		va.Spec.PoolRef.Name = s.pool.Name
		if domain != "" {
			va.Labels[afv1.LabelFailureDomain] = domain
			va.Spec.FailureDomain = domain
		}
		if err := controllerutil.SetControllerReference(s.pool, va, r.Scheme()); err != nil {
			return err
		}
		if err := r.Create(ctx, va); err != nil {
			if createMayHaveHappened(err) {
				r.expectations.expectCreate(poolKey, va.Name)
				r.domains.created(poolKey, va.Name, domain)
			}
			r.Recorder.Eventf(s.pool, nil, "Warning", afv1.ReasonCreateFailed, events.ActionRequestVM, "creating VsphereAgent: %v", err)
			return err
		}
		if err := crashpoint.Hit(ctx, crashpoint.VsphereAgentCreated); err != nil {
			return err
		}
		r.Opts.NoVMYet.Add(va.UID) // its first create skips the search for an earlier attempt's VM
		// No Event of its own: the VMCreated batch Event names the VsphereAgent with its VM seconds later
		// (a failed VM creation is a Warning about the VsphereAgent), status.plannedActions gives the
		// decision, and an Event per pass was an API write per few VMs (docs/performance.md, API economy).
		s.log.Info("created VsphereAgent", "vsphereAgent", va.Name, "failureDomain", domain, "waiting", s.waiting)
		r.expectations.expectCreate(poolKey, va.Name)
		r.domains.created(poolKey, va.Name, domain)
		metrics.VMsRequested.WithLabelValues(s.pool.Namespace, s.pool.Name, "create").Inc()
	}
	return nil
}

// createMayHaveHappened: the API server may have stored the object although the client got an error (a
// response lost on the way back, a server-side timeout, a broken connection). 429 and 503 are answered
// before the request is served, and a 4xx is a refusal: nothing was created.
func createMayHaveHappened(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		status.Status().Code == http.StatusGatewayTimeout
}
