package chaos

import (
	"fmt"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// scenario is a world-driven story; points are the crash points it reaches (a kill is planned only there).
type scenario struct {
	name   string
	points []string
	run    func(r *run) error
}

var (
	upPoints = []string{crashpoint.VsphereAgentCreated, crashpoint.VMCreateTaskStarted, crashpoint.VMCreated, crashpoint.VMPoweredOn,
		crashpoint.AgentPatched, crashpoint.ISOTempUploaded, crashpoint.ISOMoved, crashpoint.PoolStatusWritten}
	downPoints  = append(append([]string(nil), upPoints...), crashpoint.VMDestroyed, crashpoint.AgentDeleted)
	ejectPoints = append(append([]string(nil), upPoints...), crashpoint.EjectionRecordWritten, crashpoint.ReconfigureStarted,
		crashpoint.QuestionIDCheckpointed, crashpoint.AnswerSent)
)

var scenarios = []*scenario{
	{"scale-up", upPoints, func(r *run) error { return r.up(nil, 2) }},
	{"scale-down", downPoints, func(r *run) error {
		if err := r.up(nil, 2); err != nil {
			return err
		}
		return r.down(1)
	}},
	{"scale-to-zero", downPoints, func(r *run) error {
		if err := r.up(nil, 2); err != nil {
			return err
		}
		return r.down(0)
	}},
	{"iso-refresh", upPoints, isoRefresh},
	{"ejection-lock-question", ejectPoints, ejection},
	{"pool-delete-Delete", downPoints, func(r *run) error { return poolDelete(r, afv1.CleanupPolicyDelete) }},
	{"pool-delete-Retain", upPoints, func(r *run) error { return poolDelete(r, afv1.CleanupPolicyRetain) }},
	{"surplus-race", downPoints, surplusRace},
}

func scenarioNamed(name string) *scenario {
	for _, s := range scenarios {
		if s.name == name {
			return s
		}
	}
	panic("no scenario " + name)
}

// up applies the pool (once) and scales the NodePool to n: every Machine bound to an Agent of a VM.
func (r *run) up(mutate func(*afv1.VsphereAgentPool), n int) error {
	if r.poolUID == "" {
		if err := r.newPool(mutate); err != nil {
			return err
		}
	}
	if err := r.scale(n); err != nil {
		return err
	}
	var source *vsphere.VMInfo
	err := r.await(fmt.Sprintf("%d Machines served by %d VMs", n, r.wantVMs(n)), func(o *obs) bool {
		if len(o.vms) > 0 {
			source = &o.vms[0]
		}
		return r.served(o, n)
	})
	if err != nil || source == nil {
		return err
	}
	// Copies of a pool VM (copies_test.go) exist from here on, in every scenario.
	return r.makeCopies(*source)
}

// down scales to n and waits for the surplus VMs, VsphereAgents and Agents to be gone.
func (r *run) down(n int) error {
	if err := r.scale(n); err != nil {
		return err
	}
	return r.await(fmt.Sprintf("scaled down to %d", n), func(o *obs) bool { return r.scaledDown(o, n) })
}

// isoRefresh: the InfraEnv gets a new image; the pool caches it and the next VM boots it.
func isoRefresh(r *run) error {
	if err := r.up(nil, 1); err != nil {
		return err
	}
	r.iso.SetContent(uint64(r.p.Index)+1000, 48<<10)
	r.isoSizes[r.iso.SHA256()] = r.iso.Size()
	want := r.iso.SHA256()
	if err := world.SetInfraEnvImage(r.ctx, r.c.h.Client, r.s.InfraEnv, r.iso.URL(), time.Now()); err != nil {
		return err
	}
	r.note("InfraEnv image renewed (sha256 %s…)", want[:12])
	if err := r.await("new image cached", func(o *obs) bool {
		return o.pool != nil && o.pool.Status.ISO != nil && o.pool.Status.ISO.SHA256 == want
	}); err != nil {
		return err
	}
	if err := r.scale(2); err != nil {
		return err
	}
	return r.await("2 Machines served, the new VM on the new image", func(o *obs) bool {
		if !o.served(2) {
			return false
		}
		for _, va := range o.vas {
			if va.Status.VM.ISOPath != "" && len(want) > 0 && contains(va.Status.VM.ISOPath, want) {
				return true
			}
		}
		return false
	})
}

// ejection: installed workers, every guest locks its CD-ROM door, then the pool opts in: each ISO is
// ejected through the lock question, answered once.
func ejection(r *run) error {
	if err := r.up(nil, 2); err != nil {
		return err
	}
	if err := r.await("2 workers installed", func(o *obs) bool { return o.installed() == 2 }); err != nil {
		return err
	}
	o, err := r.observe()
	if err != nil {
		return err
	}
	for _, vm := range o.vms {
		w, err := r.c.h.VC.WrapVM(vm.InstanceUUID)
		if err != nil {
			return err
		}
		w.SetDoorLocked(true)
		r.locked[vm.InstanceUUID] = w
	}
	if err := r.updatePool("ejectAfterInstall: true", func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = true }); err != nil {
		return err
	}
	return r.await("both ISOs ejected", func(o *obs) bool { return o.ejected() == 2 })
}

// poolDelete: two workers; under Delete one Machine is scaled away first (its VM is surplus), then the
// pool is deleted: Delete destroys the surplus VM and keeps (releases) the one backing a Machine;
// Retain keeps both.
func poolDelete(r *run, p afv1.CleanupPolicy) error {
	if err := r.up(func(pool *afv1.VsphereAgentPool) { pool.Spec.CleanupPolicy = p }, 2); err != nil {
		return err
	}
	if p == afv1.CleanupPolicyDelete {
		// One Machine scaled away: its VM is surplus (released by the pool or by the deletion).
		if err := r.scale(1); err != nil {
			return err
		}
		if err := r.await("the scaled-away Machine gone", func(o *obs) bool { return len(o.machines) == 1 && o.liveMachines() == 1 }); err != nil {
			return err
		}
		r.released = true
	} else {
		r.retained = true
	}
	pool := &afv1.VsphereAgentPool{}
	if err := r.c.h.Client.Get(r.ctx, r.pool, pool); err != nil {
		return err
	}
	if err := r.c.h.Client.Delete(r.ctx, pool); err != nil {
		return err
	}
	r.note("pool deleted (cleanupPolicy %s)", p)
	if p == afv1.CleanupPolicyRetain {
		return r.await("pool gone, both VMs kept", func(o *obs) bool { return o.pool == nil && len(o.vms) == 2 })
	}
	return r.await("pool gone, the VM of the live Machine kept, the surplus VM destroyed", func(o *obs) bool {
		return o.pool == nil && len(o.liveVAs()) == 0 && len(o.vms) == 1 && o.liveMachines() == 1
	})
}

// surplusRace: 2 -> 1 releases a VM; demand returns (1 -> 2) while it is being released.
func surplusRace(r *run) error {
	if err := r.up(nil, 2); err != nil {
		return err
	}
	if err := r.scale(1); err != nil {
		return err
	}
	if err := r.await("a VM released", func(o *obs) bool { return len(o.liveVAs()) < 2 || len(o.vms) < 2 || o.releasing() > 0 }); err != nil {
		return err
	}
	if err := r.scale(2); err != nil {
		return err
	}
	return r.await("2 Machines served again", func(o *obs) bool { return o.served(2) && o.liveMachines() == 2 })
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
