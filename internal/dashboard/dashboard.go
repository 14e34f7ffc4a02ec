// Package dashboard installs the operator's OpenShift console dashboard: a ConfigMap in
// openshift-config-managed labelled console.openshift.io/dashboard=true, which the console lists under
// Observe -> Dashboards. The dashboard JSON is embedded from agent-forge-pool-capacity.json, the only copy.
//
// OLM creates bundle objects only in the operator's namespace, so the manager writes this one itself
// (Installer, a leader-only runnable) and restores it when its content differs. A namespaced object cannot
// have an owner in another namespace, so the ConfigMap's owner is a cluster-scoped object that goes away
// with the operator: the bundle's ClusterRole OwnerClusterRole. When OLM uninstalls the operator it deletes
// that ClusterRole and Kubernetes' garbage collector deletes the dashboard (docs/monitoring.md).
package dashboard

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/periodic"
)

// RBAC, narrowed by name: reads and writes of this one ConfigMap (server-side apply creates it, which the API
// server authorizes as create with the name, so resourceNames hold for create too; changing the ownerReferences
// of an existing one, after the owner was re-created, needs delete under OwnerReferencesPermissionEnforcement),
// and a get of the owner.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;patch;delete,resourceNames=agent-forge-operator-pool-capacity
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get,resourceNames=agent-forge-operator-metrics-reader

const (
	// Namespace is where the OpenShift console reads dashboards from.
	Namespace = "openshift-config-managed"
	// Name is the dashboard ConfigMap's name.
	Name = "agent-forge-operator-pool-capacity"
	// DataKey holds the dashboard JSON in the ConfigMap.
	DataKey = "agent-forge-pool-capacity.json"
	// Label marks a ConfigMap as a console dashboard.
	Label = "console.openshift.io/dashboard"
	// OwnerClusterRole is the bundle's metrics-reader ClusterRole (config/rbac/metrics_reader_role.yaml with
	// the kustomize name prefix); test/olm checks the bundle ships it under this name.
	OwnerClusterRole = "agent-forge-operator-metrics-reader"
	// FieldManager owns the applied fields.
	FieldManager = "agent-forge-operator-dashboard"
	// DefaultInterval is how often the installer checks the ConfigMap.
	DefaultInterval = 5 * time.Minute
	// callTimeout bounds each pass's API calls.
	callTimeout = 30 * time.Second
)

//go:embed agent-forge-pool-capacity.json
var poolCapacityJSON string

// JSON returns the embedded dashboard definition.
func JSON() string { return poolCapacityJSON }

// Outcome is what a pass found or did.
type Outcome string

const (
	// Applied means the ConfigMap was missing or differed and has been written.
	Applied Outcome = "Applied"
	// Current means the ConfigMap already matched.
	Current Outcome = "Current"
	// NamespaceAbsent means there is no openshift-config-managed namespace (not OpenShift).
	NamespaceAbsent Outcome = "NamespaceAbsent"
	// OwnerAbsent means the owner ClusterRole does not exist (e.g. `make run`); nothing is written, as nothing
	// would remove it.
	OwnerAbsent Outcome = "OwnerAbsent"
	// Forbidden means the operator's RBAC does not allow it.
	Forbidden Outcome = "Forbidden"
)

// Writer is the part of the client the installer writes with.
type Writer interface {
	Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error
}

// Installer keeps the dashboard ConfigMap in place. Reader must be uncached (the manager's API reader):
// a cached read would start a cluster-wide ConfigMap informer, which the narrow RBAC does not allow.
type Installer struct {
	Reader   client.Reader
	Writer   Writer
	Clock    clock.WithTicker
	Interval time.Duration
	Log      logr.Logger

	last Outcome
}

// NeedLeaderElection is true: only the leader writes.
func (i *Installer) NeedLeaderElection() bool { return true }

// Start runs a pass now and then every Interval until ctx ends. It never returns an error: a missing
// namespace, owner or permission is logged once (when it changes) and checked again next interval, a
// failed call retried next interval; the dashboard is never a reason to stop the manager.
func (i *Installer) Start(ctx context.Context) error {
	if i.Interval <= 0 {
		i.Interval = DefaultInterval
	}
	return periodic.Every(ctx, i.Clock, i.Interval, i.pass)
}

func (i *Installer) pass(ctx context.Context) {
	outcome, err := i.Sync(ctx)
	if err != nil {
		if ctx.Err() == nil {
			i.Log.Error(err, "console dashboard not checked; retrying", "configMap", Namespace+"/"+Name, "retryIn", i.Interval)
		}
		return
	}
	changed := outcome != i.last
	i.last = outcome
	switch outcome {
	case Applied:
		i.Log.Info("console dashboard written", "configMap", Namespace+"/"+Name)
	case NamespaceAbsent, OwnerAbsent, Forbidden:
		if changed {
			i.Log.Info("console dashboard not installed", "reason", string(outcome), "configMap", Namespace+"/"+Name,
				"owner", "ClusterRole/"+OwnerClusterRole)
		}
	}
}

// Sync makes one pass: it reads the owner and the ConfigMap and applies the ConfigMap when it is missing or
// differs (label, JSON, owner).
func (i *Installer) Sync(ctx context.Context) (Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	owner := &rbacv1.ClusterRole{}
	if err := i.Reader.Get(ctx, types.NamespacedName{Name: OwnerClusterRole}, owner); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return OwnerAbsent, nil
		case apierrors.IsForbidden(err):
			return Forbidden, nil
		}
		return "", fmt.Errorf("reading ClusterRole %s: %w", OwnerClusterRole, err)
	}
	current := &corev1.ConfigMap{}
	err := i.Reader.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: Name}, current)
	switch {
	case err == nil:
		if matches(current, owner) {
			return Current, nil
		}
	case apierrors.IsForbidden(err):
		return Forbidden, nil
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", Namespace, Name, err)
	}
	if err := i.Writer.Apply(ctx, Desired(owner), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		switch {
		case namespaceNotFound(err):
			return NamespaceAbsent, nil
		case apierrors.IsForbidden(err):
			return Forbidden, nil
		}
		return "", fmt.Errorf("applying ConfigMap %s/%s: %w", Namespace, Name, err)
	}
	return Applied, nil
}

// Desired is the ConfigMap as the installer applies it, owned by owner.
func Desired(owner *rbacv1.ClusterRole) *corev1ac.ConfigMapApplyConfiguration {
	// No blockOwnerDeletion: it would need update on the ClusterRole's finalizers, and nothing has to wait
	// for the dashboard.
	return corev1ac.ConfigMap(Name, Namespace).
		WithLabels(map[string]string{Label: "true", "app.kubernetes.io/name": "agent-forge-operator"}).
		WithData(map[string]string{DataKey: poolCapacityJSON}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(rbacv1.SchemeGroupVersion.String()).WithKind("ClusterRole").
			WithName(owner.Name).WithUID(owner.UID))
}

// matches reports whether cm carries what Desired applies (other fields and keys are left to their owners).
func matches(cm *corev1.ConfigMap, owner *rbacv1.ClusterRole) bool {
	if cm.Labels[Label] != "true" || cm.Data[DataKey] != poolCapacityJSON {
		return false
	}
	for _, ref := range cm.OwnerReferences {
		if ref.Kind == "ClusterRole" && ref.APIVersion == rbacv1.SchemeGroupVersion.String() && ref.UID == owner.UID {
			return true
		}
	}
	return false
}

// namespaceNotFound recognises the API server's refusal to create an object in a namespace that does not
// exist (NamespaceLifecycle admission).
func namespaceNotFound(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}
