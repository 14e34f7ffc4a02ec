package planner

import (
	"sort"
	"strings"
)

// TemplateVerdict is the outcome of the template rule for one VM.
type TemplateVerdict struct {
	// Drifted: a bound worker made from an earlier template, reported and never touched.
	Drifted bool
	// Replace: a VM whose Agent never bound, made from an earlier template: released and replaced.
	Replace bool
	Message string
}

// DecideTemplate applies the template rule: a VM that matches the current template (or whose template
// is not known) → nothing; InUse (Agent reserved or bound, or a Machine references it) → reported as
// drift, never touched (CAPI replaces it when the NodePool rolls); not InFlight or Available (failed,
// released, being removed) → left to the rest of the lifecycle; creation blocked or the pool paused →
// kept (a replacement could not follow); else replaced, whatever spec.iso.replaceOutdatedVMs says (a
// template change is the user's own edit of the pool, and a VM of the old shape bound later would be
// a worker the user no longer asked for).
func DecideTemplate(vm VM, state VMLifecycle, createBlocked bool) TemplateVerdict {
	if len(vm.TemplateDrift) == 0 {
		return TemplateVerdict{}
	}
	what := "made from an earlier template (" + strings.Join(vm.TemplateDrift, ", ") + ")"
	switch {
	case state == VMInUse:
		return TemplateVerdict{Drifted: true, Message: what + "; kept: a bound worker is never touched"}
	case state != VMInFlight && state != VMAvailable:
		return TemplateVerdict{Message: what + "; not replaced: the VM is " + string(state)}
	case createBlocked:
		return TemplateVerdict{Message: what + "; kept while the pool cannot create a replacement"}
	}
	return TemplateVerdict{Replace: true, Message: what + "; replaced: no AgentMachine has reserved its Agent"}
}

// Drift is what a plan found of the bound workers made from an earlier template.
type Drift struct {
	// Workers names the drifted bound workers (sorted); Unrecorded counts bound workers whose template
	// is not known.
	Workers    []string
	Unrecorded int
	// differences counts each difference over the drifted workers.
	differences map[string]int
}

// add counts one VM (in the plan's lifecycle state) with its verdict; Plan sorts Workers once at the end.
func (d *Drift) add(vm VM, state VMLifecycle, v TemplateVerdict) {
	if v.Drifted {
		d.Workers = append(d.Workers, vm.Name)
		if d.differences == nil {
			d.differences = map[string]int{}
		}
		for _, diff := range vm.TemplateDrift {
			d.differences[diff]++
		}
	}
	if vm.TemplateUnrecorded && state == VMInUse {
		d.Unrecorded++
	}
}

// Differences lists the differences of the drifted workers, the most common first (then by text).
func (d Drift) Differences() []string {
	out := make([]string, 0, len(d.differences))
	for k := range d.differences {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if d.differences[out[i]] != d.differences[out[j]] {
			return d.differences[out[i]] > d.differences[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}
