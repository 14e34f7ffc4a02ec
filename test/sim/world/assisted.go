package world

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// registerAgents plays a host booting the discovery ISO and assisted-service creating its Agent.
// Hosts call home independently: the registrations of different InfraEnvs are written by workers
// at once, those of one InfraEnv in turn (they are checked against one list of its Agents).
func (d *Driver) registerAgents(ctx context.Context) error {
	if d.vc == nil {
		d.setVMs(nil, false)
		return nil
	}
	vms, err := d.vmReads.poweredOnVMs(ctx, d.vc, d.opts.Datacenter)
	if err != nil {
		d.setVMs(nil, false)
		return err
	}
	if err := d.learnImages(ctx); err != nil {
		return err
	}
	candidates, reboots := d.registrationCandidates(vms)
	if err := d.rebootInstalled(ctx, reboots); err != nil {
		return err
	}
	type group struct {
		namespace string
		vms       []VM
		infraEnvs []types.NamespacedName
	}
	var groups []*group
	byNS := map[string]*group{}
	for _, vm := range candidates {
		infraEnv, ok := d.infraEnvFor(ctx, &vm)
		if !ok {
			continue // an empty drive or an image of no InfraEnv here: the host never reaches the service
		}
		if _, ok := d.staticAddressFor(vm); !ok {
			continue // no DHCP: a host whose image lacks its config never reaches assisted-service
		}
		g := byNS[infraEnv.Namespace]
		if g == nil {
			g = &group{namespace: infraEnv.Namespace}
			byNS[infraEnv.Namespace] = g
			groups = append(groups, g)
		}
		g.vms, g.infraEnvs = append(g.vms, vm), append(g.infraEnvs, infraEnv)
	}
	return d.forEach(ctx, len(groups), func(ctx context.Context, i int) error {
		g := groups[i]
		l := newList(AgentGVK)
		if err := d.c.List(ctx, l, client.InNamespace(g.namespace)); err != nil {
			return err
		}
		agents := make([]*unstructured.Unstructured, 0, len(l.Items)+len(g.vms))
		for i := range l.Items {
			agents = append(agents, &l.Items[i])
		}
		for j, vm := range g.vms {
			if existing := agentOf(agents, vm); existing != nil {
				// Registered before this Driver started (e.g. a restarted demo): keep it current too.
				d.trackExisting(vm, client.ObjectKeyFromObject(existing))
				continue
			}
			// Only a running host calls home: the list above may be seconds old under load, and a VM
			// destroyed meanwhile registers nothing.
			if running, err := stillPoweredOn(ctx, d.vc, vm); err != nil {
				return err
			} else if !running {
				continue
			}
			agent, err := d.createAgent(ctx, vm, g.infraEnvs[j])
			if err != nil {
				return err
			}
			agents = append(agents, agent)
		}
		return nil
	})
}

// setVMs records the powered-on VMs the registration behaviour saw (for Connected).
func (d *Driver) setVMs(vms map[string]VM, listed bool) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.vms, d.vmsListed = vms, listed
}

// hostReboot is a registered host seen powered on again after it was off.
type hostReboot struct {
	vm    VM
	agent types.NamespacedName
}

// registrationCandidates records the powered-on VMs and returns those that have an ISO attached, have
// not registered yet and have been on for RegistrationDelay, and the registered hosts that booted again.
func (d *Driver) registrationCandidates(vms []VM) ([]VM, []hostReboot) {
	now := d.now()
	d.stateMu.Lock()
	register := d.register
	seen := make(map[string]VM, len(vms))
	var out []VM
	var reboots []hostReboot
	for _, vm := range vms {
		key := strings.ToLower(vm.BIOSUUID)
		seen[key] = vm
		if prev, ok := d.bootTimes[key]; ok && !vm.BootTime.IsZero() && !vm.BootTime.Equal(prev) {
			d.rebooted[key] = true // reset, or off and on between two looks: the host started again
		}
		if !vm.BootTime.IsZero() {
			d.bootTimes[key] = vm.BootTime
		}
		if agent, done := d.registered[key]; done {
			// The agent registers at every boot; a host whose Agent was deleted meanwhile (assisted-service
			// deregistered it, and its agent stopped asking) comes back as a new registration.
			_, tracked := d.registeredAt[agent]
			if d.rebooted[key] && tracked {
				reboots = append(reboots, hostReboot{vm: vm, agent: agent})
			}
			if !d.rebooted[key] || tracked {
				delete(d.rebooted, key)
				continue
			}
			delete(d.registered, key)
			delete(d.firstSeen, key)
		}
		delete(d.rebooted, key)
		if vm.ISOPath == "" {
			continue // an empty drive boots nothing that calls home
		}
		out = append(out, vm)
	}
	for key := range d.registered {
		if _, on := seen[key]; !on {
			d.rebooted[key] = true // off or gone: the next power-on is a boot
		}
	}
	for key := range d.bootTimes {
		if _, on := seen[key]; !on {
			delete(d.bootTimes, key) // off or gone: its next power-on is a boot anyway
		}
	}
	d.vms, d.vmsListed = seen, true
	d.stateMu.Unlock()

	kept := out[:0]
	for _, vm := range out {
		if register != nil && !register(vm) { // a test's filter: called without the driver's lock
			continue
		}
		kept = append(kept, vm)
	}
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	ready := kept[:0]
	for _, vm := range kept {
		key := strings.ToLower(vm.BIOSUUID)
		if _, seen := d.firstSeen[key]; !seen {
			d.firstSeen[key] = now
		}
		if now.Sub(d.firstSeen[key]) >= d.opts.RegistrationDelay {
			ready = append(ready, vm)
		}
	}
	return ready, reboots
}

// trackExisting adopts an Agent a VM registered before this Driver started.
func (d *Driver) trackExisting(vm VM, key types.NamespacedName) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.registered[strings.ToLower(vm.BIOSUUID)] = key
	if _, tracked := d.registeredAt[key]; !tracked {
		d.registeredAt[key] = d.now().Add(-d.opts.ValidationDelay)
	}
}

// agentOf finds the Agent this VM registered: assisted-service keys a host by its hardware identity (the
// host ID the agent derives from the system UUID, the Agent's name here), never by a MAC: another machine
// booted with the VM's MAC (and no or another serial) is a host of its own. An Agent reporting the VM's
// serial is the VM's too (registered before this Driver started).
func agentOf(agents []*unstructured.Unstructured, vm VM) *unstructured.Unstructured {
	serial, name := SerialFromBIOSUUID(vm.BIOSUUID), AgentNameFor(vm.BIOSUUID)
	for _, a := range agents {
		if a.GetName() == name {
			return a
		}
		if s, _, _ := unstructured.NestedString(a.Object, "status", "inventory", "systemVendor", "serialNumber"); s != "" && s == serial {
			return a
		}
	}
	return nil
}

// RegisterHost plays a registration assisted-service accepted from vm before the VM was destroyed: it
// creates the host's Agent now, whether or not the VM still exists (assisted-service writes the Agent
// from the host record, not from the VM).
func (d *Driver) RegisterHost(ctx context.Context, vm VM, infraEnv types.NamespacedName) (*unstructured.Unstructured, error) {
	return d.createAgent(ctx, vm, infraEnv)
}

// createAgent creates the Agent the way assisted-service does: unapproved, unbound, labelled with
// its InfraEnv (plus the InfraEnv's spec.agentLabels), named by host ID, inventory from the VM.
func (d *Driver) createAgent(ctx context.Context, vm VM, infraEnvKey types.NamespacedName) (*unstructured.Unstructured, error) {
	ie := newObject(InfraEnvGVK)
	if err := d.c.Get(ctx, infraEnvKey, ie); err != nil {
		return nil, fmt.Errorf("infraenv %s: %w", infraEnvKey, err)
	}
	lbls := map[string]string{LabelInfraEnv: infraEnvKey.Name}
	extra, _, _ := unstructured.NestedStringMap(ie.Object, "spec", "agentLabels")
	for k, v := range extra {
		lbls[k] = v
	}
	agent := newObject(AgentGVK)
	agent.SetNamespace(infraEnvKey.Namespace)
	agent.SetName(AgentNameFor(vm.BIOSUUID))
	agent.SetLabels(lbls)
	agent.Object["spec"] = map[string]any{"approved": false, "role": ""}
	if err := d.c.Create(ctx, agent); err != nil {
		if apierrors.IsAlreadyExists(err) {
			d.stateMu.Lock()
			d.registered[strings.ToLower(vm.BIOSUUID)] = client.ObjectKeyFromObject(agent)
			d.stateMu.Unlock()
			return agent, nil
		}
		return nil, fmt.Errorf("creating agent: %w", err)
	}
	d.wrote()
	now := d.now()
	agent.Object["status"] = map[string]any{
		"role": "auto-assign", "bootstrap": false,
		"inventory":  d.inventory(vm),
		"ntpSources": d.ntpSources(vm),
		"debugInfo":  map[string]any{"state": stateDiscoveringUnbound},
	}
	d.applyStatus(agent, d.hostStatus(agent, true, now, now), now)
	if err := d.c.Status().Update(ctx, agent); err != nil {
		return nil, fmt.Errorf("agent status: %w", err)
	}
	d.wrote()
	key := client.ObjectKeyFromObject(agent)
	d.stateMu.Lock()
	d.registered[strings.ToLower(vm.BIOSUUID)] = key
	d.registeredAt[key] = now
	d.stateMu.Unlock()
	d.log.Info("agent registered", "agent", key, "vm", vm.Name)
	return agent, nil
}

// updateAgentStatus keeps the Agents the world registered current: Connected follows the VM's
// power state/existence; after ValidationDelay an unbound host's validations are calculated (its state
// known-unbound or insufficient-unbound); RequirementsMet follows approval and validity.
func (d *Driver) updateAgentStatus(ctx context.Context) error {
	d.stateMu.Lock()
	tracked := len(d.registeredAt)
	d.stateMu.Unlock()
	if tracked == 0 {
		return nil
	}
	now := d.now()
	// One list instead of one read per Agent: the benches track a thousand.
	all, err := d.listInPass(ctx, AgentGVK)
	if err != nil {
		return err
	}
	byKey := make(map[types.NamespacedName]*unstructured.Unstructured, len(all))
	for _, a := range all {
		byKey[client.ObjectKeyFromObject(a)] = a
	}
	type update struct {
		agent     *unstructured.Unstructured
		connected bool
	}
	var updates []update
	d.stateMu.Lock()
	biosOf := make(map[types.NamespacedName]string, len(d.registered))
	for bios, k := range d.registered {
		biosOf[k] = bios
	}
	for key, at := range d.registeredAt {
		agent, ok := byKey[key]
		if !ok {
			if d.inScope(key.Namespace) {
				delete(d.registeredAt, key)
			}
			continue
		}
		connected := unstructuredcond.IsTrue(agent, CondConnected)
		if d.vmsListed {
			_, connected = d.vms[biosOf[key]]
		}
		if st := d.hostStatus(agent, connected, at, now); st.changes(agent, now) {
			agent = agent.DeepCopy() // the list may be a shared cache
			d.applyStatus(agent, st, now)
			updates = append(updates, update{agent: agent, connected: connected})
		}
	}
	d.stateMu.Unlock()
	return d.forEach(ctx, len(updates), func(ctx context.Context, i int) error {
		u := updates[i]
		if err := d.c.Status().Update(ctx, u.agent); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		d.wrote()
		if !u.connected {
			d.log.Info("agent disconnected (VM gone or off)", "agent", client.ObjectKeyFromObject(u.agent))
		}
		return nil
	})
}

// HostPoweredOn reports whether the last registration pass saw the VM with that BIOS UUID powered on:
// a test that powers a VM off waits for it before the host's next power-on counts as a boot.
func (d *Driver) HostPoweredOn(biosUUID string) bool {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	_, on := d.vms[strings.ToLower(biosUUID)]
	return on && d.vmsListed
}

// ntpSourceName is the NTP server a host's chronyd reports (assisted-service's ntp step lists each source).
const ntpSourceName = "clock.ntp.example.com"

// ntpSources is status.ntpSources as the host's agent reports it: its source synced, or unreachable when
// the host's network reaches no NTP server (Options.NTPUnreachable).
func (d *Driver) ntpSources(vm VM) []any {
	state := "synced"
	if d.opts.NTPUnreachable != nil && d.opts.NTPUnreachable(vm) {
		state = "unreachable"
	}
	return []any{map[string]any{"sourceName": ntpSourceName, "sourceState": state}}
}
