package main

import (
	"errors"
	"testing"
)

func TestNormaliseError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`Operation cannot be fulfilled on vsphereagents.agent-forge.containeroo.ch "hc-worker-x7k2p": the object has been modified`,
			`Operation cannot be fulfilled on vsphereagents.agent-forge.containeroo.ch "…": the object has been modified`},
		{"preparing Agent 3f1c2a9e-1b2c-4d5e-8f90-0123456789ab: timeout", "preparing Agent <uid>: timeout"},
		{"VM bench-07/hc-worker-2 not found after 3 tries", "VM <id> not found after <id> tries"},
	} {
		if got := normaliseError(errors.New(tc.in)); got != tc.want {
			t.Errorf("normaliseError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestErrorSinkCountsReconcilerErrorsByController(t *testing.T) {
	errs := newReconcileErrors()
	log := errs.logger().WithValues("controller", "vsphereagent", "reconcileID", "x")
	log.Error(errors.New(`Agent "a1" not found`), "Reconciler error")
	log.Error(errors.New(`Agent "b2" not found`), "Reconciler error")
	log.Error(errors.New("other"), "something else")
	log.Info("ignored")
	got := errs.snapshot()
	if n := got[errorCause{"vsphereagent", `Agent "…" not found`}]; n != 2 || len(got) != 1 {
		t.Fatalf("counts = %v, want 2 for the one cause", got)
	}
}
