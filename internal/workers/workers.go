// Package workers runs a loop's iterations on a few goroutines: the reads
// of a thousand small files (worktree entries, records, locks) that would
// otherwise wait on each other one by one.
package workers

import (
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
