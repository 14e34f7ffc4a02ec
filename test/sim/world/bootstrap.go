package world

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// bootstrap is what the provider takes from the Machine's bootstrap data Secret for the Agent's spec
// (processBootstrapDataSecret): the machine config pool, the ignition token Secret it created and the
// other ignition headers. Zero when the Machine names no data Secret.
type bootstrap struct {
	machineConfigPool string
	tokenRef          map[string]any
	headers           map[string]any
}

// applyTo writes the three fields into the Agent's spec.
func (b bootstrap) applyTo(agent *unstructured.Unstructured) {
	_ = unstructured.SetNestedField(agent.Object, b.machineConfigPool, "spec", "machineConfigPool")
	if b.tokenRef != nil {
		_ = unstructured.SetNestedMap(agent.Object, b.tokenRef, "spec", "ignitionEndpointTokenReference")
	} else {
		unstructured.RemoveNestedField(agent.Object, "spec", "ignitionEndpointTokenReference")
	}
	if b.headers != nil {
		_ = unstructured.SetNestedMap(agent.Object, b.headers, "spec", "ignitionEndpointHTTPHeaders")
	} else {
		unstructured.RemoveNestedField(agent.Object, "spec", "ignitionEndpointHTTPHeaders")
	}
}

// matches reports whether the Agent's spec already holds the three fields.
func (b bootstrap) matches(agent *unstructured.Unstructured) bool {
	pool, _, _ := unstructured.NestedString(agent.Object, "spec", "machineConfigPool")
	ref, _, _ := unstructured.NestedMap(agent.Object, "spec", "ignitionEndpointTokenReference")
	headers, _, _ := unstructured.NestedMap(agent.Object, "spec", "ignitionEndpointHTTPHeaders")
	return pool == b.machineConfigPool && reflect.DeepEqual(ref, b.tokenRef) && reflect.DeepEqual(headers, b.headers)
}

// bootstrapData reads the Machine's bootstrap data Secret, labels it for backup, parses its ignition
// (exactly one merge source) and creates or replaces the token Secret agent-<dataSecretName> (labels for
// assisted-service's watch and backup, key ignition-token, no ownerRef, never deleted).
func (d *Driver) bootstrapData(ctx context.Context, machine *unstructured.Unstructured) (bootstrap, error) {
	name, _, _ := unstructured.NestedString(machine.Object, "spec", "bootstrap", "dataSecretName")
	if name == "" {
		return bootstrap{}, nil
	}
	ns := machine.GetNamespace()
	// The provider reads the Secret from its informer cache on every pass; HyperShift's data Secrets are
	// named by content hash and never change, so the world processes each one once.
	if b, ok := d.bootstrapSeen(ns + "/" + name); ok {
		return b, nil
	}
	var data corev1.Secret
	if err := d.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &data); err != nil {
		return bootstrap{}, fmt.Errorf("bootstrap data secret %s/%s: %w", ns, name, err)
	}
	if data.Labels[LabelBackup] != "true" {
		if data.Labels == nil {
			data.Labels = map[string]string{}
		}
		data.Labels[LabelBackup] = "true"
		if err := d.c.Update(ctx, &data); err != nil {
			return bootstrap{}, err
		}
		d.wrote()
	}
	var ign struct {
		Ignition struct {
			Config struct {
				Merge []struct {
					Source      string `json:"source"`
					HTTPHeaders []struct {
						Name  string `json:"name"`
						Value string `json:"value"`
					} `json:"httpHeaders"`
				} `json:"merge"`
			} `json:"config"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(data.Data["value"], &ign); err != nil {
		return bootstrap{}, fmt.Errorf("bootstrap data %s/%s: %w", ns, name, err)
	}
	if n := len(ign.Ignition.Config.Merge); n != 1 {
		return bootstrap{}, fmt.Errorf("bootstrap data %s/%s: %d ignition merge sources, want 1", ns, name, n)
	}
	src := ign.Ignition.Config.Merge[0]
	out := bootstrap{machineConfigPool: src.Source[strings.LastIndex(src.Source, "/")+1:]}
	token := ""
	for _, h := range src.HTTPHeaders {
		if h.Name == "Authorization" {
			if !strings.HasPrefix(h.Value, "Bearer ") {
				return bootstrap{}, fmt.Errorf("bootstrap data %s/%s: Authorization header is not a Bearer token", ns, name)
			}
			token = strings.TrimPrefix(h.Value, "Bearer ")
			continue
		}
		if out.headers == nil {
			out.headers = map[string]any{}
		}
		out.headers[h.Name] = h.Value
	}
	if token != "" {
		tokenName := "agent-" + name
		if err := d.ensureTokenSecret(ctx, ns, tokenName, token); err != nil {
			return bootstrap{}, err
		}
		out.tokenRef = map[string]any{"namespace": ns, "name": tokenName}
	}
	d.stateMu.Lock()
	d.bootstraps[ns+"/"+name] = out
	d.stateMu.Unlock()
	return out, nil
}

func (d *Driver) bootstrapSeen(key string) (bootstrap, bool) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	b, ok := d.bootstraps[key]
	return b, ok
}

// ensureTokenSecret creates the token Secret, or replaces it whole when its content differs.
func (d *Driver) ensureTokenSecret(ctx context.Context, ns, name, token string) error {
	want := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelAgentInstallWatch: "true", LabelBackup: "true"}},
		Data:       map[string][]byte{"ignition-token": []byte(token)},
	}
	var have corev1.Secret
	err := d.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &have)
	switch {
	case apierrors.IsNotFound(err):
		if err := d.c.Create(ctx, &want); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		d.wrote()
		return nil
	case err != nil:
		return err
	}
	if string(have.Data["ignition-token"]) == token && have.Labels[LabelAgentInstallWatch] == "true" && have.Labels[LabelBackup] == "true" {
		return nil
	}
	want.ResourceVersion = have.ResourceVersion
	if err := d.c.Update(ctx, &want); err != nil {
		return err
	}
	d.wrote()
	return nil
}
