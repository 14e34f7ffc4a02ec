package controllers

import (
	"context"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// ISORequest asks the ISO cache to keep a pool's discovery ISO current.
type ISORequest struct {
	Pool     *afv1.VsphereAgentPool
	InfraEnv agents.InfraEnv
	Client   vsphere.Client
}

// ISOUpdate is the cache's answer for one pass: a new status.iso (nil: unchanged), the ISOReady
// condition, and when to look again.
type ISOUpdate struct {
	Status          *afv1.ISOStatus
	Ready           bool
	Reason, Message string
	RequeueAfter    time.Duration
}

// ISOCache keeps discovery ISOs cached on the datastore. Reconcile never blocks on a download.
type ISOCache interface {
	Reconcile(ctx context.Context, req ISORequest) ISOUpdate
}
