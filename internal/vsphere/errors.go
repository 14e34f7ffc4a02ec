package vsphere

import (
	"errors"
	"fmt"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/redact"
)

// ErrorClass says how a controller should react to a vSphere error. Its values are condition reasons
// (a class is shown as VSphereReachable's or VMCreated's reason), so each is the API's constant.
type ErrorClass string

const (
	// ClassNotFound means the object does not exist.
	ClassNotFound = ErrorClass(afv1.ReasonNotFound)
	// ClassAuth means login failed or the session is no longer valid after a retry.
	ClassAuth = ErrorClass(afv1.ReasonAuthenticationFailed)
	// ClassPermission means the user lacks a privilege.
	ClassPermission = ErrorClass(afv1.ReasonPermissionDenied)
	// ClassTransient means network trouble, timeouts, busy objects; retry with backoff.
	ClassTransient = ErrorClass(afv1.ReasonTransient)
	// ClassFault means vCenter refused the operation; FaultType names the vSphere fault.
	ClassFault = ErrorClass(afv1.ReasonFault)
	// ClassOwnership means the VM does not carry our ownership marker (or a different one); never retried blindly.
	ClassOwnership = ErrorClass(afv1.ReasonOwnershipMismatch)
	// ClassRefused means a guard refused the operation (media changed, a different question pending, ...).
	ClassRefused = ErrorClass(afv1.ReasonRefused)
	// ClassInvalid means the request itself is invalid (bad config: unknown datacenter, network, ...).
	ClassInvalid = ErrorClass(afv1.ReasonInvalidConfiguration)
	// ClassDuplicateName means vCenter refused a create because another object (not ours) already has that
	// name in the folder. Permanent for that name: retrying it can only fail again.
	ClassDuplicateName = ErrorClass(afv1.ReasonDuplicateName)
)

// Error is a classified vSphere error. Messages never contain credentials or URL tokens.
type Error struct {
	Class ErrorClass
	// FaultType is the vSphere fault type name (e.g. "InvalidPowerState") when known.
	FaultType string
	Op        string
	Err       error
}

func (e *Error) Error() string {
	msg := string(e.Class)
	if e.FaultType != "" {
		msg += " (" + e.FaultType + ")"
	}
	if e.Op != "" {
		msg = e.Op + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	// Texts of HTTP and SOAP errors may quote URLs; none may carry a credential or token.
	return redact.String(msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrTimeout) true for a classified deadline or network timeout.
func (e *Error) Is(target error) bool { return target == ErrTimeout && IsTimeout(e.Err) }

// NewError builds a classified error.
func NewError(class ErrorClass, op string, format string, args ...any) error {
	return &Error{Class: class, Op: op, Err: fmt.Errorf(format, args...)}
}

// ClassOf returns the class of err, ClassTransient for unclassified errors.
func ClassOf(err error) ErrorClass {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassTransient
}

// IsPermanentCreateError reports whether a CreateVM error can never succeed by retrying the same
// request: a name taken by a foreign VM, a placement that does not resolve, or a VM with our instance UUID
// that does not carry our marker. Transient, authentication and permission errors are not permanent (the
// cause is fixed outside the request).
func IsPermanentCreateError(err error) bool {
	switch ClassOf(err) {
	case ClassDuplicateName, ClassInvalid, ClassOwnership:
		return true
	}
	return false
}

// IsNotFound reports whether err is classified NotFound.
func IsNotFound(err error) bool { return err != nil && ClassOf(err) == ClassNotFound }
