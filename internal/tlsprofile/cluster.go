package tlsprofile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=config.openshift.io,resources=apiservers,verbs=get,resourceNames=cluster

// apiServerGVK is OpenShift's cluster-wide API server configuration; its one object is named "cluster".
var apiServerGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "APIServer"}

// readTimeout bounds one read of the APIServer object.
const readTimeout = 10 * time.Second

// ErrChanged ends the manager when the cluster's profile changed: the process restarts with the new one
// (as OpenShift's own operators do), instead of swapping the servers' settings under open connections.
var ErrChanged = errors.New("the cluster's TLS security profile changed: restarting to apply it")

// Source says where a profile came from.
type Source string

const (
	// SourceCluster is the APIServer object's spec.tlsSecurityProfile (or OpenShift's default when unset).
	SourceCluster Source = "cluster"
	// SourceNotOpenShift means the kind is not served or the object is missing: Go's defaults apply.
	SourceNotOpenShift Source = "not-openshift"
	// SourceFallback means the object could not be read or named a profile that does not map; OpenShift's
	// default applies until a read succeeds.
	SourceFallback Source = "fallback"
)

// Read returns the profile a server should apply. Not on OpenShift (the kind is not served, or no
// "cluster" object): ok is false and the server keeps Go's defaults. Any other failure returns OpenShift's
// default with the error, so a server never runs weaker than Intermediate on OpenShift.
func Read(ctx context.Context, c client.Reader) (p Profile, src Source, err error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiServerGVK)
	if err := c.Get(ctx, types.NamespacedName{Name: "cluster"}, u); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return Profile{}, SourceNotOpenShift, nil
		}
		return Default(), SourceFallback, fmt.Errorf("reading the cluster's TLS security profile (APIServer cluster): %w", err)
	}
	spec := &configv1.TLSSecurityProfile{}
	raw, found, err := unstructured.NestedMap(u.Object, "spec", "tlsSecurityProfile")
	if err != nil {
		return Default(), SourceFallback, fmt.Errorf("APIServer cluster: spec.tlsSecurityProfile: %w", err)
	}
	if !found {
		spec = nil
	} else if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return Default(), SourceFallback, fmt.Errorf("APIServer cluster: spec.tlsSecurityProfile: %w", err)
	}
	p, err = FromSpec(spec)
	if err != nil {
		return Default(), SourceFallback, err
	}
	return p, SourceCluster, nil
}

// Watcher re-reads the profile every Interval and returns ErrChanged from Start when it differs from the
// one the servers were built with. It runs on every replica (not only the leader): each serves metrics.
type Watcher struct {
	Reader   client.Reader
	Applied  Profile
	Source   Source
	Interval time.Duration
	Log      logr.Logger
}

// NeedLeaderElection is false: every replica's servers follow the profile.
func (w *Watcher) NeedLeaderElection() bool { return false }

// Start polls until ctx ends or the profile changes.
func (w *Watcher) Start(ctx context.Context) error {
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		p, src, err := Read(ctx, w.Reader)
		if err != nil {
			w.Log.Error(err, "cannot read the cluster's TLS security profile; keeping the one applied", "profile", w.Applied.String())
			continue
		}
		if src != w.Source || !p.Equal(w.Applied) {
			w.Log.Info("the cluster's TLS security profile changed; restarting to apply it", "from", w.Applied.String(), "to", p.String(), "source", src)
			return ErrChanged
		}
	}
}
