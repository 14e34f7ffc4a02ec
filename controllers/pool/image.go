package pool

import (
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// currentImage is the pool's cached image when it is the InfraEnv's current one (same createdTime, ISO
// ready); zero otherwise: while the cache catches up, a replacement would boot the old image again.
func currentImage(s *poolScope) planner.Image {
	img := poolspec.Image(s.pool)
	if s.infraEnv == nil || s.infraEnv.CreatedTime == nil || s.isoCond == nil || !s.isoCond.status ||
		!img.CreatedTime.Equal(s.infraEnv.CreatedTime.Time) {
		return planner.Image{}
	}
	return img
}
