package pool

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/credentials"
	"github.com/containeroo/agent-forge-operator/internal/events"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// caBundleSecretPoll is how often a pool whose CA Secret is missing looks again: Secrets are not
// watched (no cluster-wide Secret list/watch), while a referenced ConfigMap's appearance or change
// enqueues the pool at once (see SetupWithManager).
const caBundleSecretPoll = 30 * time.Second

// caBundle is the pool's image host CA as read this pass.
type caBundle struct {
	pem []byte
	// source names the object and key for messages ("ConfigMap ns/name key ca.crt"); never the content.
	source string
	// missing says what is absent (object or key); no download is attempted while it is set.
	missing string
}

// readCABundle reads spec.iso.caBundleRef with an uncached Get on every pass (a changed bundle is used
// by the next download, no restart): Secrets are never cached, and ConfigMaps are watched by metadata
// only. The reference is always in the pool's namespace.
func (r *Reconciler) readCABundle(ctx context.Context, pool *afv1.VsphereAgentPool) (caBundle, error) {
	ref := pool.Spec.ISO.CABundleRef
	if ref == nil {
		return caBundle{}, nil
	}
	kind, key := ref.Kind, ref.Key
	if kind == "" {
		kind = afv1.CABundleKindConfigMap
	}
	if key == "" {
		key = afv1.DefaultCABundleKey
	}
	objKey := client.ObjectKey{Namespace: pool.Namespace, Name: ref.Name}
	cb := caBundle{source: fmt.Sprintf("%s %s key %s", kind, objKey, key)}
	var data map[string][]byte
	var err error
	if kind == afv1.CABundleKindSecret {
		var s corev1.Secret
		err = r.APIReader.Get(credentials.SecretReadContext(ctx), objKey, &s)
		data = s.Data
	} else {
		var cm corev1.ConfigMap
		err = r.APIReader.Get(ctx, objKey, &cm)
		data = cm.BinaryData
		if v, ok := cm.Data[key]; ok {
			data = map[string][]byte{key: []byte(v)}
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		cb.missing = fmt.Sprintf("%s %s named by spec.iso.caBundleRef not found", kind, objKey)
		return cb, nil
	case err != nil:
		return cb, fmt.Errorf("reading %s %s (spec.iso.caBundleRef): %w", kind, objKey, err)
	}
	v, ok := data[key]
	if !ok {
		cb.missing = fmt.Sprintf("%s %s named by spec.iso.caBundleRef has no key %s", kind, objKey, key)
		return cb, nil
	}
	cb.pem = v
	return cb, nil
}

// caBundleMissing blocks the pool's download while its CA reference points at nothing: ISOReady says
// so (an ISO cached before stays in use) and a rate-limited Warning Event names the object and key.
func (r *Reconciler) caBundleMissing(s *poolScope, cb caBundle) {
	msg := cb.missing + "; no download is attempted until it exists"
	if st := s.pool.Status.ISO; st != nil && st.Path != "" {
		msg += "; new VMs keep using the cached ISO " + st.Path
	}
	s.isoCond = &conditionUpdate{false, afv1.ReasonCABundleNotFound, msg}
	if s.pool.Spec.ISO.CABundleRef.Kind == afv1.CABundleKindSecret {
		s.requeueAfter(caBundleSecretPoll)
	}
	if r.refusalEvents.Allow(client.ObjectKeyFromObject(s.pool).String()+"/cabundle", afv1.ReasonCABundleNotFound, r.Opts.Clock.Now()) {
		r.Recorder.Eventf(s.pool, nil, corev1.EventTypeWarning, afv1.ReasonCABundleNotFound, events.ActionRefreshISO, "%s", msg)
	}
}
