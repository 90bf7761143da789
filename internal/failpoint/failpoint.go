// Package failpoint provides named points where tests can make a majlis
// process crash, fail or pause.
//
// Points are declared with New at package level, so that every name is
// known (and listed by `majlis debug failpoints`) whether or not it is
// enabled. They fire only in binaries built with the `failpoints` build tag,
// and only when the environment variable MAJLIS_FAILPOINTS names them:
//
//	MAJLIS_FAILPOINTS="allocate/claimed=crash;reclaim/before-move=sleep(2s)"
//
// Actions: crash (the process kills itself with SIGKILL), error (Inject
// returns an error wrapping ErrInjected), panic (Inject panics, as a bug
// would), sleep(D) (Inject pauses for the Go duration D), wait(PATH) (Inject
// creates PATH.reached, then pauses until PATH exists: tests order processes
// with it instead of with sleeps). In ordinary builds Inject is a no-op that
// costs one branch, and the variable is not read.
package failpoint

import (
	"sort"
	"sync"

	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/wire"
)

// ErrInjected is wrapped by the error an `error` action returns.
var ErrInjected = wire.Sentinel("internal", "failpoint: injected error")

// EnvVar is the environment variable that enables failpoints.
const EnvVar = "MAJLIS_FAILPOINTS"

// A Point is a named place in the code where a failure can be injected.
type Point struct{ name string }

var (
	mu     sync.Mutex
	points = map[string]*Point{}
)

// New declares a failpoint. Declaring the same name twice panics: names are
// part of the test contract and must be unique.
func New(name string) *Point {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := points[name]; dup {
		panic("failpoint: duplicate name " + name)
	}
	p := &Point{name: name}
	points[name] = p
	return p
}

// Name returns the point's name.
func (p *Point) Name() string { return p.name }

// Inject runs the action configured for p, if any. It returns a non-nil
// error only for the `error` action.
func (p *Point) Inject() error {
	if !Enabled {
		return nil
	}
	return inject(p.name)
}

// Names lists every declared failpoint, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(points))
	for n := range points {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Check validates MAJLIS_FAILPOINTS in binaries built with the failpoints
// tag: every item name=action, every name declared, every action known.
// It returns an *envvar.Error. Call it after every package that declares
// points has been initialised (from main).
func Check() error {
	spec, err := check()
	if err != nil {
		return &envvar.Error{Name: EnvVar, Value: spec, Reason: err.Error(),
			Accepted: "name=action items separated by ';', each name listed by 'majlis debug failpoints', each action crash, error, panic, sleep(D) or wait(PATH)"}
	}
	return nil
}
