package vsphere

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"reflect"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/tlstrust"
)

// methodFault extracts the vSphere fault carried by err (SOAP fault, vim fault or task error), or nil.
func methodFault(err error) types.BaseMethodFault {
	if err == nil {
		return nil
	}
	var f types.BaseMethodFault
	fault.In(err, func(mf types.BaseMethodFault, _ string, _ []types.LocalizableMessage) bool {
		f = mf
		return true
	})
	return f
}

// faultTypeName is the vSphere fault type name, e.g. "InvalidPowerState".
func faultTypeName(f types.BaseMethodFault) string {
	t := reflect.TypeOf(f)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// classify wraps err into a classified *Error for operation op. Already classified errors pass through.
// The message keeps the original error text, which never holds credentials (the SOAP client strips the
// user info from URLs).
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	if f := methodFault(err); f != nil {
		e := &Error{Class: classOfFault(f), FaultType: faultTypeName(f), Op: op, Err: err}
		return e
	}
	return &Error{Class: classOfPlainError(err), Op: op, Err: err}
}

func classOfFault(f types.BaseMethodFault) ErrorClass {
	switch f.(type) {
	case *types.NotAuthenticated, *types.InvalidLogin:
		return ClassAuth
	case *types.NoPermission:
		return ClassPermission
	case *types.NotFound, *types.ManagedObjectNotFound, *types.FileNotFound:
		return ClassNotFound
	}
	if fault.IsTransientError(f) {
		return ClassTransient
	}
	return ClassFault
}

func classOfPlainError(err error) ErrorClass {
	switch {
	case IsCertificateError(err):
		// An untrusted certificate is a configuration problem (CA bundle / thumbprint), not a blip.
		return ClassInvalid
	case rest.IsStatusError(err, http.StatusUnauthorized):
		return ClassAuth
	case rest.IsStatusError(err, http.StatusForbidden):
		return ClassPermission
	case rest.IsStatusError(err, http.StatusNotFound):
		return ClassNotFound
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ClassTransient
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return ClassTransient
	}
	return ClassTransient
}

// IsCertificateError reports a refused server certificate: not signed by a trusted CA, not naming the
// host dialled (DNS name or IP literal), expired, or not matching the pinned thumbprint.
func IsCertificateError(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		certInvalid      x509.CertificateInvalidError
	)
	return errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &certInvalid) ||
		errors.Is(err, tlstrust.ErrNoHost) || errors.Is(err, tlstrust.ErrPinMismatch) || soap.IsCertificateUntrusted(err)
}

// isNotAuthenticated reports a session that vCenter no longer knows (expired, terminated).
func isNotAuthenticated(err error) bool {
	_, ok := methodFault(err).(*types.NotAuthenticated)
	return ok
}

// isFault reports whether err carries a vSphere fault of the same type as target.
func isFault(err error, target types.BaseMethodFault) bool {
	f := methodFault(err)
	return f != nil && reflect.TypeOf(f) == reflect.TypeOf(target)
}
