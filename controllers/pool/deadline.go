package pool

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// ControllerName names the pool controller (its workqueue, metrics and liveness entries).
const ControllerName = "vsphereagentpool"

// passTimeoutError is a pool pass whose work was cut by Options.PoolPassTimeout. It counts as a vCenter
// timeout (errors.Is(err, vsphere.ErrTimeout)): a pass's time goes to vCenter, the API server reads come
// from the cache.
type passTimeoutError struct {
	timeout time.Duration
	// phase is the step the pass was in when its deadline passed.
	phase string
}

func (e *passTimeoutError) Error() string {
	return fmt.Sprintf("the pool's pass was cut by its %s deadline (pool pass timeout) while %s: vCenter did not answer in time; retried with backoff",
		e.timeout, e.phase)
}

// Is makes errors.Is(err, vsphere.ErrTimeout) true, so the condition reason is VCenterTimeout.
func (e *passTimeoutError) Is(target error) bool { return target == vsphere.ErrTimeout }

// passCut records a pass cut by its deadline: VSphereReachable=False/VCenterTimeout (set from s.vsErr
// by setStatus) and a Warning Event. A login cut by the deadline has already announced itself through
// credentialsRefused, so the Event here is for a cut after login (a hung call, not a hung login).
func (r *Reconciler) passCut(s *poolScope, phase string) error {
	err := &passTimeoutError{timeout: r.Opts.PoolPassTimeout, phase: phase}
	announced := s.vsErr != nil
	s.vsErr = err
	if !announced && r.refusalEvents.Allow(client.ObjectKeyFromObject(s.pool).String()+"/pass-timeout", afv1.ReasonVCenterTimeout, r.Opts.Clock.Now()) {
		r.Recorder.Eventf(s.pool, nil, "Warning", afv1.ReasonVCenterTimeout, events.ActionPreflight, "%s", err)
	}
	return err
}

// passFinished clears the rate limit of the pass-timeout Event once a pass ends in time.
func (r *Reconciler) passFinished(s *poolScope) {
	r.refusalEvents.Clear(client.ObjectKeyFromObject(s.pool).String() + "/pass-timeout")
}
