package credentials

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Error carries a condition reason; its message never includes Secret values.
type Error struct {
	reason, msg string
}

func (e *Error) Error() string { return e.msg }

// Load reads the pool's credentials Secret with an uncached read (Secrets are not cached
// cluster-wide: least privilege and memory) and validates it. A Secret in another namespace is read only
// when that namespace is in secretNamespaces (the operator's --credentials-secret-namespaces), and every
// way such a Secret cannot be used (namespace not allowed, Secret missing, read forbidden, keys invalid)
// gives one and the same error, so a pool's author learns nothing about Secrets of other namespaces;
// the operator's log says which it was.
func Load(ctx context.Context, reader client.Reader, pool *afv1.VsphereAgentPool, secretNamespaces []string) (vsphere.Credentials, error) {
	key := credentialsSecretKey(pool)
	ns, name := key.Namespace, key.Name
	if ns != pool.Namespace {
		creds, cause := loadCrossNamespace(ctx, reader, key, secretNamespaces)
		if cause == nil {
			return creds, nil
		}
		var transient transientError
		if errors.As(cause, &transient) {
			return vsphere.Credentials{}, transient.err
		}
		logr.FromContextOrDiscard(ctx).Info("cross-namespace credentials Secret refused", "pool", pool.Namespace+"/"+pool.Name,
			"secret", key.String(), "cause", cause.Error())
		return vsphere.Credentials{}, CrossNamespaceRefusal(pool.Namespace, ns, name)
	}
	var s corev1.Secret
	if err := reader.Get(SecretReadContext(ctx), key, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return vsphere.Credentials{}, &Error{afv1.ReasonCredentialsNotFound, fmt.Sprintf("credentials Secret %s/%s not found", ns, name)}
		}
		return vsphere.Credentials{}, err
	}
	return FromSecret(ns, name, s.Data)
}

// CrossNamespaceRefusal is the one error of a credentials Secret in another namespace that cannot be
// used, whatever the cause: its text never depends on whether the Secret exists.
func CrossNamespaceRefusal(poolNamespace, ns, name string) error {
	return &Error{afv1.ReasonCrossNamespaceSecretRefused, fmt.Sprintf(
		"credentials Secret %s/%s cannot be used by a pool in namespace %s: a Secret outside the pool's namespace must be in a namespace the operator allows (--credentials-secret-namespaces or AGENT_FORGE_CREDENTIALS_SECRET_NAMESPACES; default none), exist, be readable by the operator and hold server, username and password; this message is the same whichever of these fails",
		ns, name, poolNamespace)}
}

// transientError is a failed read that says nothing about the Secret (the API server unreachable, a
// timeout): returned as it is, and retried.
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }

// loadCrossNamespace reads and validates a Secret in another namespace; its error is the cause of a
// refusal (for the log only), or a transientError.
func loadCrossNamespace(ctx context.Context, reader client.Reader, key client.ObjectKey, secretNamespaces []string) (vsphere.Credentials, error) {
	if !slices.Contains(secretNamespaces, key.Namespace) {
		return vsphere.Credentials{}, fmt.Errorf("namespace %s is not in the operator's credentials Secret namespaces %v", key.Namespace, secretNamespaces)
	}
	var s corev1.Secret
	if err := reader.Get(SecretReadContext(ctx), key, &s); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return vsphere.Credentials{}, err
		}
		return vsphere.Credentials{}, transientError{err}
	}
	return FromSecret(key.Namespace, key.Name, s.Data)
}

// SecretReadContext is ctx for reading a Secret: client-go logs request and response bodies through
// the context's logger at verbosity 8 and up, so the read gets a logger that discards and no log level
// ever prints a Secret's data.
func SecretReadContext(ctx context.Context) context.Context {
	return logr.NewContext(ctx, logr.Discard())
}

// FromSecret reads and validates the data of the credentials Secret ns/name (pure: the
// preflight fuzz test feeds it random values). Its errors name the Secret and the problem, never a value.
func FromSecret(ns, name string, data map[string][]byte) (vsphere.Credentials, error) {
	get := func(k string) string { return strings.TrimSpace(string(data[k])) }
	creds := vsphere.Credentials{
		Server: get("server"), Username: get("username"), Password: string(data["password"]),
		Insecure: strings.EqualFold(get("insecure"), "true"), CABundle: data["caBundle"], Thumbprint: get("thumbprint"),
	}
	var missing []string
	for _, kv := range [][2]string{{"server", creds.Server}, {"username", creds.Username}, {"password", creds.Password}} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return vsphere.Credentials{}, &Error{afv1.ReasonCredentialsInvalid, fmt.Sprintf("credentials Secret %s/%s lacks keys %v", ns, name, missing)}
	}
	if err := vsphere.ValidateServer(creds.Server); err != nil {
		// the message never quotes the value: it may carry a password in its userinfo
		return vsphere.Credentials{}, &Error{afv1.ReasonCredentialsInvalid, fmt.Sprintf("credentials Secret %s/%s: %v", ns, name, err)}
	}
	return creds, nil
}

// VSphereReason is the VSphereReachable reason of err: the credentials problem, else the vSphere error
// class.
func VSphereReason(err error) string {
	if ce := (*Error)(nil); errors.As(err, &ce) {
		return ce.reason
	}
	return vsphere.Reason(err)
}
