package planner

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// The plan tables write a Snapshot and the Decisions it must give as one line of words each.
//
// A snapshot:
//
//	demand=N foreign=N pending=N   waiting AgentMachines, foreign free Agents, creations not yet listed
//	standby=N                      spec.standby
//	vms=L,L,...                    the pool's VMs v1, v2, ... (oldest first), one letter each:
//	                                 f in flight (created), n not created yet (Pending, no VM),
//	                                 a available, u in use (bound, a Machine), d released after use,
//	                                 x failed (registration timeout), r releasing (being deleted);
//	                               then marks: @z in failure domain z, ~ booted an outdated image,
//	                                 # holds a static-IP lease, & its Agent is already bound,
//	                                 ? available but its Agent not suitable yet (not validated),
//	                                 % made from an earlier template (memoryMiB 16384 -> 32768),
//	                                 = its template not recorded (made before VMs recorded it),
//	                                 ! its creation failed (VMCreateFailed), +D registered (a, u, d) or
//	                                 failed (x) D ago (default: registered 1h ago, failed 1m ago)
//	domains=z1,z2                  failure domains (default: none, one placement named ""), marks:
//	                                 ! skipped for failing creations, - no headroom, <N maxVMs N, ^N headroom N
//	max=N conc=N                   limits.maxVMs, limits.maxConcurrentProvisioning
//	paused retain                  spec.paused, cleanupPolicy Retain (default Delete)
//	preflight=R staticip=R         a failed preflight check, a static addressing block, with reason R
//	hardware                       a host of the current template shape failed a hardware validation
//	nosession noiso                no vCenter session, no cached ISO
//	noreplace image=unknown        replaceOutdatedVMs false, the current image not known yet
//	debounce=I/M burst=V/F/L       burst window idle/max (default off); a burst open since an earlier
//	                                 pass with value V, opened F ago, last changed L ago
//
// Decisions, rendered in this order, each word only when it is not empty:
//
//	deficit=N create=N|z1,z2 release=v1:Reason,... expire=v1,... block=R refuse=R wait=R,R
//	requeue=D burst=V/F/L closes noscan standby=R/S limit=R drift=v1,... unrecorded=N
//
// (standby=R/S only with standby=N in the snapshot: R ready standby Agents, S VMs it lacks beyond the
// deficit; limit=R: what caps its refill.)
//
// (create=N without failure domains; closes: creating closes the open burst; noscan: no orphan scan.)

var (
	notationNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	imageOld    = Image{SHA256: "aaaa", CreatedTime: notationNow.Add(-48 * time.Hour)}
	imageNew    = Image{SHA256: "bbbb", CreatedTime: notationNow.Add(-24 * time.Hour)}
)

// snapshotOf parses a snapshot line.
func snapshotOf(t *testing.T, line string) Snapshot {
	t.Helper()
	s := Snapshot{Now: notationNow, RemoveSurplus: true, CurrentImage: imageNew, ReplaceOutdated: true,
		RegistrationFailureThreshold: 3, FailedRetention: time.Hour, Debounce: Debounce{Idle: -1}}
	var domainWords []string
	for _, w := range strings.Fields(line) {
		key, val, _ := strings.Cut(w, "=")
		switch key {
		case "demand":
			s.Waiting = atoi(t, val)
		case "foreign":
			s.ForeignAvailable = atoi(t, val)
		case "pending":
			s.PendingCreates = atoi(t, val)
		case "standby":
			s.Standby = atoi(t, val)
		case "vms":
			for i, v := range strings.Split(val, ",") {
				s.VMs = append(s.VMs, vmOf(t, i, v))
			}
		case "domains":
			domainWords = strings.Split(val, ",")
		case "max":
			s.MaxVMs = i32(int32(atoi(t, val)))
		case "conc":
			s.MaxConcurrentProvisioning = i32(int32(atoi(t, val)))
		case "paused":
			s.Paused = true
		case "retain":
			s.RemoveSurplus = false
		case "preflight":
			s.Blocks.Preflight = val
		case "staticip":
			s.Blocks.StaticIP = val
		case "hardware":
			s.Blocks.Hardware = "VM v1 (has-memory-for-role: Insufficient memory)"
		case "nosession":
			s.Blocks.NoSession = true
		case "noiso":
			s.Blocks.NoISO = true
		case "noreplace":
			s.ReplaceOutdated = false
		case "image":
			s.CurrentImage = Image{}
		case "debounce":
			idle, longest, _ := strings.Cut(val, "/")
			s.Debounce = Debounce{Idle: dur(t, idle), Max: dur(t, longest)}
		case "burst":
			parts := strings.Split(val, "/")
			s.Burst = &Burst{Value: atoi(t, parts[0]), First: notationNow.Add(-dur(t, parts[1])), LastChange: notationNow.Add(-dur(t, parts[2]))}
		default:
			t.Fatalf("snapshot word %q not understood", w)
		}
	}
	s.Domains = domainsOf(t, domainWords, s.VMs)
	return s
}

// vmOf parses one VM: a letter, then marks.
func vmOf(t *testing.T, i int, word string) VM {
	t.Helper()
	o := VMObservation{Name: fmt.Sprintf("v%d", i+1), CreatedAt: notationNow.Add(-3*time.Hour + time.Duration(i)*time.Minute)}
	vm := VM{HasVM: true, Image: imageNew}
	registered := true
	switch word[0] {
	case 'f':
		o.Phase, registered = afv1.VMPhaseProvisioning, false
	case 'n':
		o.Phase, vm.HasVM, registered = afv1.VMPhasePending, false, false
	case 'a':
		o.Phase, vm.AgentReady = afv1.VMPhaseAvailable, true
	case 'u':
		o.Phase, o.MachineRef = afv1.VMPhaseBound, true
	case 'd':
		o.Phase = afv1.VMPhaseReleased
	case 'x':
		o.Phase, o.Reason, o.PhaseChangedAt, registered = afv1.VMPhaseFailed, afv1.ReasonRegistrationTimeout, notationNow.Add(-time.Minute), false
	case 'r':
		o.Phase, o.Deleting = afv1.VMPhaseAvailable, true
	default:
		t.Fatalf("VM %q: unknown letter", word)
	}
	if registered {
		o.RegisteredAt = notationNow.Add(-time.Hour)
	}
	const marks = "@~#&!+?%="
	for rest := word[1:]; rest != ""; {
		mark := rest[0]
		arg := rest[1:]
		if end := strings.IndexAny(arg, marks); end >= 0 {
			arg, rest = arg[:end], arg[end:]
		} else {
			rest = ""
		}
		switch mark {
		case '@':
			vm.Domain = arg
		case '~':
			vm.Image = imageOld
		case '#':
			vm.StaticIPLease = true
		case '&':
			o.AgentBound = true
		case '?':
			vm.AgentReady = false
		case '%':
			vm.TemplateDrift = []string{"memoryMiB 16384 -> 32768"}
		case '=':
			vm.TemplateUnrecorded = true
		case '!':
			o.Reason = afv1.ReasonVMCreateFailed
		case '+':
			if o.Phase == afv1.VMPhaseFailed {
				o.PhaseChangedAt = notationNow.Add(-dur(t, arg))
			} else {
				o.RegisteredAt = notationNow.Add(-dur(t, arg))
			}
		default:
			t.Fatalf("VM %q: unknown mark %q", word, mark)
		}
		if mark != '@' && mark != '+' && arg != "" {
			t.Fatalf("VM %q: mark %q takes no argument", word, mark)
		}
	}
	vm.VMObservation = o
	return vm
}

// domainsOf parses the failure domains and counts their VMs as the pool controller does (not deleting,
// not failed; in flight while not yet registered).
func domainsOf(t *testing.T, words []string, vms []VM) []Domain {
	t.Helper()
	if len(words) == 0 {
		words = []string{""}
	}
	var out []Domain
	for _, w := range words {
		name, rest := w, ""
		if i := strings.IndexAny(w, "!-<^"); i >= 0 {
			name, rest = w[:i], w[i:]
		}
		d := Domain{Name: name}
		for rest != "" {
			mark := rest[0]
			num := strings.TrimLeft(rest[1:], "0123456789")
			arg := rest[1 : len(rest)-len(num)]
			rest = num
			switch mark {
			case '!':
				d.Skipped, d.Failing = true, true
			case '-':
				d.Skipped, d.Headroom = true, new(int)
			case '<':
				d.MaxVMs = i32(int32(atoi(t, arg)))
			case '^':
				h := atoi(t, arg)
				d.Headroom, d.Skipped = &h, h == 0
			default:
				t.Fatalf("domain %q: unknown mark %q", w, mark)
			}
		}
		for _, vm := range vms {
			if vm.Domain != d.Name || vm.Deleting || vm.Phase == afv1.VMPhaseFailed {
				continue
			}
			d.VMs++
			switch vm.Phase {
			case "", afv1.VMPhasePending, afv1.VMPhaseProvisioning:
				d.InFlight++
			}
		}
		out = append(out, d)
	}
	return out
}

// render writes decisions in the table's notation.
func render(s Snapshot, d Decisions) string {
	var w []string
	add := func(key string, vals []string) {
		if len(vals) > 0 {
			w = append(w, key+"="+strings.Join(vals, ","))
		}
	}
	if d.Deficit > 0 {
		w = append(w, fmt.Sprintf("deficit=%d", d.Deficit))
	}
	if len(d.Creates) > 0 {
		if strings.Join(d.Creates, "") == "" {
			w = append(w, fmt.Sprintf("create=%d", len(d.Creates)))
		} else {
			add("create", d.Creates)
		}
	}
	var releases, refuse, wait []string
	for _, r := range d.Releases {
		releases = append(releases, r.Name+":"+r.Reason)
	}
	add("release", releases)
	add("expire", d.Expire)
	if d.Block != "" {
		w = append(w, "block="+d.Block)
	}
	for _, a := range d.Actions {
		switch a.Kind {
		case ActionRefuse:
			refuse = append(refuse, a.Reason)
		case ActionWait:
			wait = append(wait, a.Reason)
		}
	}
	add("refuse", refuse)
	add("wait", wait)
	if d.RequeueAfter > 0 {
		w = append(w, "requeue="+d.RequeueAfter.String())
	}
	if b := d.Burst; b != nil {
		w = append(w, fmt.Sprintf("burst=%d/%s/%s", b.Value, s.Now.Sub(b.First), s.Now.Sub(b.LastChange)))
		if d.CloseBurst {
			w = append(w, "closes")
		}
	}
	if !d.ScanOrphans {
		w = append(w, "noscan")
	}
	if s.Standby > 0 {
		w = append(w, fmt.Sprintf("standby=%d/%d", d.Standby.Ready, d.Standby.Short))
	}
	if d.Standby.Limit != "" {
		w = append(w, "limit="+d.Standby.Limit)
	}
	add("drift", d.Drift.Workers)
	if d.Drift.Unrecorded > 0 {
		w = append(w, fmt.Sprintf("unrecorded=%d", d.Drift.Unrecorded))
	}
	return strings.Join(w, " ")
}

func i32(v int32) *int32 { return &v }

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

func dur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return d
}
