// Package periodic runs a manager Runnable's work now and then on every tick of an injected clock. It is
// the one such loop (the CRD guard, the exclusion watcher, the dashboard installer and the wait for
// external CRDs use it): apimachinery's wait.BackoffUntil takes an injected clock only through
// NewJitteredBackoffManager, which is deprecated.
package periodic

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Every calls fn now and then every interval until ctx ends; it returns nil then, so a manager
// Runnable built on it never stops the manager.
func Every(ctx context.Context, clk clock.WithTicker, interval time.Duration, fn func(context.Context)) error {
	fn(ctx)
	ticker := clk.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			fn(ctx)
		}
	}
}
