package v1alpha1

// ConditionImageCurrent (VsphereAgent) says whether the VM booted the discovery image the pool serves
// now. A VM that never bound and booted an older image is replaced (spec.iso.replaceOutdatedVMs); a
// bound or installed worker is never touched.
const ConditionImageCurrent = "ImageCurrent"

// Reasons for ImageCurrent.
const (
	// ReasonCurrentImageUnknown: the current or the booted discovery image is not known yet.
	ReasonCurrentImageUnknown = "CurrentImageUnknown"
	// ReasonCurrentImage: the VM booted the pool's current discovery image.
	ReasonCurrentImage = "CurrentImage"
	// ReasonOutdatedImage: the VM never bound and booted an older image; it is replaced (the pool
	// releases it and creates new VMs from the current image as demand needs).
	ReasonOutdatedImage = "OutdatedImage"
	// ReasonOutdatedImageInUse: the VM booted an older image but its Agent is reserved or bound (or a
	// Machine references it): it is never touched.
	ReasonOutdatedImageInUse = "OutdatedImageInUse"
	// ReasonOutdatedImageKept: the VM booted an older image and the pool opted out
	// (spec.iso.replaceOutdatedVMs false), or creation is blocked so a replacement could not follow.
	ReasonOutdatedImageKept = "OutdatedImageKept"
)
