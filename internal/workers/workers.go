// Package workers runs a loop's iterations on a few goroutines: the reads
// of a thousand small files (worktree entries, records, locks) that would
// otherwise wait on each other one by one; and a few different steps at
// once (Concurrently).
package workers

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls f(i) for every i in [0, n), on at most per×GOMAXPROCS
// goroutines (and never more than n), and returns once every call has.
// Calls take the next i in order as they finish, so that slow and fast
// items share the goroutines evenly. f must be safe to call concurrently;
// it usually writes only its own index of a slice.
func Each(n, per int, f func(i int)) {
	workers := min(n, max(1, per)*runtime.GOMAXPROCS(0))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// Concurrently calls every fn at once, each on its own goroutine, and
// returns once all have returned: the first error in fns's order, or nil.
func Concurrently(fns ...func() error) error {
	for _, err := range run(fns) {
		if err != nil {
			return err
		}
	}
	return nil
}

// ConcurrentlyJoined is Concurrently returning every error, joined in
// fns's order (errors.Join): a caller that must see them all.
func ConcurrentlyJoined(fns ...func() error) error {
	return errors.Join(run(fns)...)
}

func run(fns []func() error) []error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errs
}
