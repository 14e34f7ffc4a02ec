package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestEveryCallsNowThenOnEachTickUntilCancelled(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{}, 8)
	var n atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- Every(ctx, clk, time.Minute, func(context.Context) { n.Add(1); calls <- struct{}{} })
	}()
	<-calls // the call before any tick
	for i := 0; i < 2; i++ {
		for tries := 0; !clk.HasWaiters(); tries++ {
			if tries > 5000 {
				t.Fatal("Every never created its ticker")
			}
			time.Sleep(time.Millisecond) // the loop has not created its ticker yet
		}
		clk.Step(time.Minute)
		<-calls
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Every returned %v after cancel, want nil", err)
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("%d calls, want 3 (now + 2 ticks)", got)
	}
}
