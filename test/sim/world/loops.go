package world

import (
	"context"
	"sync"
	"time"
)

// RunLoops runs every behaviour as its own loop until ctx is done, as the real systems run:
// HyperShift/CAPI render Machines while assisted-service registers hosts and the provider binds, each
// at its own pace, so a slow behaviour (a thousand Machines to render) holds no other. Each loop runs
// its behaviour (under the behaviour's lock, so Step and the public methods that act as it stay
// exclusive), then waits interval. Errors are logged, not returned. It returns when ctx is done and
// every loop has stopped.
func (d *Driver) RunLoops(ctx context.Context, interval time.Duration) {
	var wg sync.WaitGroup
	for _, b := range d.behaviours {
		wg.Add(1)
		go func(b behaviour) {
			defer wg.Done()
			for {
				d.startLoopRun(b.name, d.now())
				err := d.runBehaviour(withPassCache(ctx), b)
				d.endLoopRun(b.name, d.now(), err)
				if err != nil && ctx.Err() == nil {
					d.log.Error(err, "world behaviour failed", "behaviour", b.name)
				}
				if !d.sleep(ctx, interval) {
					return
				}
			}
		}(b)
	}
	wg.Wait()
}

// forEach calls fn for 0..n-1 with Options.Workers at once, as a controller's workers take objects
// from its queue. With one worker (the default) it goes in order and stops at the first error;
// with more it lets the others finish and returns the first error.
func (d *Driver) forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	return forEachWith(ctx, d.opts.Workers, n, fn)
}

// forEachWith is forEach with a given number of workers.
func forEachWith(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			if err := fn(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		wg   sync.WaitGroup
		errs firstError
		mu   sync.Mutex
		next int
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= n || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, ok := take(); ok; i, ok = take() {
				errs.add(fn(ctx, i))
			}
		}()
	}
	wg.Wait()
	return errs.get()
}

// firstError keeps the first error its workers report.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) add(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
