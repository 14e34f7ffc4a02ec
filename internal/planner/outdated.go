package planner

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"fmt"
	"time"
)

// Image identifies a discovery image: the SHA-256 of its bytes (the cache's content address) and the
// InfraEnv status.createdTime it was generated at (zero when not recorded).
type Image struct {
	SHA256      string
	CreatedTime time.Time
}

func (i Image) String() string {
	sha := i.SHA256
	if len(sha) > 12 {
		sha = sha[:12]
	}
	if i.CreatedTime.IsZero() {
		return "sha256 " + sha
	}
	return fmt.Sprintf("created %s (sha256 %s)", i.CreatedTime.UTC().Format(time.RFC3339), sha)
}

// ImageCheck is what decides whether one VM is replaced because it booted an outdated image.
type ImageCheck struct {
	// Enabled is spec.iso.replaceOutdatedVMs.
	Enabled bool
	// Current is the image the pool serves now; its SHA256 is empty while the cache does not hold the
	// InfraEnv's current image (a replacement would boot the old one again).
	Current Image
	// Booted is the image the VM booted (from its VsphereAgent's status).
	Booted Image
	// State is the VM's lifecycle (Lifecycle): only InFlight and Available VMs (their Agent never bound)
	// are replaced; InUse ones (Agent reserved or bound, or a Machine references the VM) never.
	State VMLifecycle
	// StaticIPLease: the VM holds a static-IP lease (spec.network). Such pools regenerate the image for
	// every lease batch and release, and the VM was created only once its own configuration was in the
	// image it booted: replacing it on every regeneration would churn VMs and images without end.
	StaticIPLease bool
	// CreateBlocked: the pool cannot create a VM now (preflight, breaker, credentials): no replacement.
	CreateBlocked bool
}

// ImageVerdict is the outcome for one VM, with the ImageCurrent reason and a message.
type ImageVerdict struct {
	// Current is false when the VM booted another image than the current one.
	Current bool
	// Replace is true when the VM is to be released and replaced.
	Replace bool
	// Reason is one of the ImageCurrent reasons (afv1.ReasonCurrentImage, afv1.ReasonOutdatedImage, ...).
	Reason, Message string
}

// DecideImage applies the outdated-image rule, in order: unknown current image or booted image →
// nothing decided; same bytes, or a booted image not older than the current one → current; InUse →
// kept (a bound or installed worker is never touched); not InFlight or Available (failed, released,
// being removed) → left to the rest of the lifecycle; a static-IP lease, opted out or creation blocked
// → kept; else replaced.
func DecideImage(c ImageCheck) ImageVerdict {
	if c.Current.SHA256 == "" || c.Booted.SHA256 == "" {
		return ImageVerdict{Current: true, Reason: afv1.ReasonCurrentImageUnknown, Message: "the current or the booted discovery image is not known yet"}
	}
	if c.Booted.SHA256 == c.Current.SHA256 ||
		(!c.Booted.CreatedTime.IsZero() && !c.Current.CreatedTime.IsZero() && !c.Booted.CreatedTime.Before(c.Current.CreatedTime)) {
		return ImageVerdict{Current: true, Reason: afv1.ReasonCurrentImage, Message: "booted the current discovery image, " + c.Booted.String()}
	}
	outdated := fmt.Sprintf("booted discovery image %s; the current one is %s", c.Booted, c.Current)
	switch {
	case c.State == VMInUse:
		return ImageVerdict{Reason: afv1.ReasonOutdatedImageInUse, Message: outdated + "; kept: its Agent is reserved or bound (a worker is never touched)"}
	case c.StaticIPLease:
		return ImageVerdict{Reason: afv1.ReasonOutdatedImageKept, Message: outdated + "; kept: it holds a static-IP lease whose configuration is in the image it booted (static-IP pools regenerate the image per lease batch)"}
	case c.State != VMInFlight && c.State != VMAvailable:
		return ImageVerdict{Reason: afv1.ReasonOutdatedImageKept, Message: outdated + "; not replaced: the VM is " + string(c.State)}
	case !c.Enabled:
		return ImageVerdict{Reason: afv1.ReasonOutdatedImageKept, Message: outdated + "; kept: spec.iso.replaceOutdatedVMs is false"}
	case c.CreateBlocked:
		return ImageVerdict{Reason: afv1.ReasonOutdatedImageKept, Message: outdated + "; kept while the pool cannot create a replacement"}
	}
	return ImageVerdict{Replace: true, Reason: afv1.ReasonOutdatedImage, Message: outdated + "; replaced: no AgentMachine has reserved its Agent"}
}
