package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// ShippedCSV is the bundle's ClusterServiceVersion, relative to the repository root: the permissions
// OLM grants the operator come from it.
const ShippedCSV = "bundle/manifests/agent-forge-operator.clusterserviceversion.yaml"

// OperatorNamespace is where the operator's ServiceAccount lives in tests (its leader-election Lease
// and namespaced Role too).
const OperatorNamespace = "agent-forge-system"

// Permissions are the RBAC rules a CSV grants its ServiceAccount: Cluster becomes a ClusterRole bound
// cluster-wide, Namespaced a Role in the operator's namespace (what OLM does for an AllNamespaces
// install).
type Permissions struct {
	ServiceAccount string
	Cluster        []rbacv1.PolicyRule
	Namespaced     []rbacv1.PolicyRule
}

// ShippedPermissions reads the permissions of the shipped CSV.
func ShippedPermissions() (Permissions, error) {
	root, err := RepoRoot()
	if err != nil {
		return Permissions{}, err
	}
	data, err := os.ReadFile(filepath.Join(root, ShippedCSV))
	if err != nil {
		return Permissions{}, err
	}
	var csv struct {
		Spec struct {
			Install struct {
				Spec struct {
					ClusterPermissions []csvPermission `json:"clusterPermissions"`
					Permissions        []csvPermission `json:"permissions"`
				} `json:"spec"`
			} `json:"install"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		return Permissions{}, fmt.Errorf("%s: %w", ShippedCSV, err)
	}
	var p Permissions
	for _, cp := range csv.Spec.Install.Spec.ClusterPermissions {
		p.ServiceAccount = cp.ServiceAccountName
		p.Cluster = append(p.Cluster, cp.Rules...)
	}
	for _, np := range csv.Spec.Install.Spec.Permissions {
		if p.ServiceAccount != "" && np.ServiceAccountName != p.ServiceAccount {
			return Permissions{}, fmt.Errorf("%s: permissions for two service accounts (%s, %s)", ShippedCSV, p.ServiceAccount, np.ServiceAccountName)
		}
		p.ServiceAccount = np.ServiceAccountName
		p.Namespaced = append(p.Namespaced, np.Rules...)
	}
	if p.ServiceAccount == "" || len(p.Cluster) == 0 {
		return Permissions{}, fmt.Errorf("%s: no clusterPermissions", ShippedCSV)
	}
	return p, nil
}

type csvPermission struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// IdentityOptions tune OperatorIdentity. The zero value provisions the shipped permissions.
type IdentityOptions struct {
	// Namespace holds the ServiceAccount and the namespaced Role (default OperatorNamespace).
	Namespace string
	// Name suffixes the ServiceAccount and role names, so several identities can live on one API
	// server (e.g. one per removed rule). Empty: the shipped names.
	Name string
	// Permissions replace the shipped ones (e.g. a copy with one rule removed).
	Permissions *Permissions
	// TargetNamespaces grants the namespaced permissions as OLM does for a MultiNamespace
	// OperatorGroup: a Role and RoleBinding in Namespace and in each target namespace. Empty: as
	// for AllNamespaces, where OLM makes them a ClusterRole and ClusterRoleBinding.
	TargetNamespaces []string
}

// Identity is a ServiceAccount bound to exactly the given permissions, and a token for it.
type Identity struct {
	Namespace, ServiceAccount string
	Permissions               Permissions
	// Config authenticates as the ServiceAccount (bearer token, strict field validation like every
	// test client).
	Config *rest.Config
}

// OperatorIdentity provisions the operator's ServiceAccount with the shipped permissions as OLM grants
// them (clusterPermissions: ClusterRole + ClusterRoleBinding; permissions: see
// IdentityOptions.TargetNamespaces) and returns a config that authenticates
// as it with a token from the TokenRequest API: the operator in tests runs as it does when OLM
// installs it, never as cluster-admin.
func (e *Env) OperatorIdentity(ctx context.Context, o IdentityOptions) (*Identity, error) {
	perms := o.Permissions
	if perms == nil {
		p, err := ShippedPermissions()
		if err != nil {
			return nil, err
		}
		perms = &p
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	ns, sa := OperatorNamespace, perms.ServiceAccount
	if o.Namespace != "" {
		ns = o.Namespace
	}
	if o.Name != "" {
		sa += "-" + o.Name
	}
	if err := ensure(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})); err != nil {
		return nil, err
	}
	if err := ensure(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})); err != nil {
		return nil, err
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	role := ns + "-" + sa // cluster-scoped: unique per namespace
	if err := ensure(cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: perms.Cluster}, metav1.CreateOptions{})); err != nil {
		return nil, err
	}
	if err := ensure(cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subject}, metav1.CreateOptions{})); err != nil {
		return nil, err
	}
	if err := grantNamespaced(ctx, cs, role, subject, perms.Namespaced, append([]string{ns}, o.TargetNamespaces...), len(o.TargetNamespaces) == 0); err != nil {
		return nil, err
	}
	token, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64((24 * time.Hour).Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for %s/%s: %w", ns, sa, err)
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = token.Status.Token
	if err := strict(cfg); err != nil {
		return nil, err
	}
	return &Identity{Namespace: ns, ServiceAccount: sa, Permissions: *perms, Config: cfg}, nil
}

// grantNamespaced grants the CSV's permissions as OLM does per install mode: a Role and RoleBinding in
// each of namespaces (MultiNamespace: the operator's own and every target), and for AllNamespaces a
// ClusterRole and ClusterRoleBinding as well.
func grantNamespaced(ctx context.Context, cs kubernetes.Interface, role string, subject []rbacv1.Subject, rules []rbacv1.PolicyRule, namespaces []string, allNamespaces bool) error {
	if len(rules) == 0 {
		return nil
	}
	for _, ns := range namespaces {
		if err := ensure(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})); err != nil {
			return err
		}
		if err := ensure(cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{})); err != nil {
			return err
		}
		if err := ensure(cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}, Subjects: subject}, metav1.CreateOptions{})); err != nil {
			return err
		}
	}
	if !allNamespaces {
		return nil
	}
	elevated := role + "-all-namespaces"
	if err := ensure(cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: elevated}, Rules: rules}, metav1.CreateOptions{})); err != nil {
		return err
	}
	return ensure(cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: elevated},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: elevated}, Subjects: subject}, metav1.CreateOptions{}))
}

// ensure accepts AlreadyExists: identities are provisioned idempotently (a restarted operator in the
// same API server reuses its ServiceAccount).
func ensure[T any](_ T, err error) error {
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Kubeconfig renders a kubeconfig for the identity (token authentication, the API server's CA).
func (id *Identity) Kubeconfig() ([]byte, error) {
	user := id.Namespace + ":" + id.ServiceAccount
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: id.Config.Host, CertificateAuthorityData: id.Config.CAData,
		CertificateAuthority: id.Config.CAFile}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: id.Config.BearerToken}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: user, Namespace: id.Namespace}
	kc.CurrentContext = "operator"
	return clientcmd.Write(*kc)
}

// WriteKubeconfig writes Kubeconfig to path (0600) and returns path.
func (id *Identity) WriteKubeconfig(path string) (string, error) {
	data, err := id.Kubeconfig()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, data, 0o600)
}
