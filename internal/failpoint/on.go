//go:build failpoints

package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Enabled reports whether this binary was built with the failpoints tag.
const Enabled = true

var (
	parseOnce sync.Once
	actions   map[string]string
	parseErr  error
)

func parse() {
	actions = map[string]string{}
	spec := os.Getenv(EnvVar)
	for _, item := range strings.Split(spec, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, action, ok := strings.Cut(item, "=")
		if !ok {
			parseErr = fmt.Errorf("failpoint: %s: %q has no action (want name=action)", EnvVar, item)
			return
		}
		name, action = strings.TrimSpace(name), strings.TrimSpace(action)
		if err := checkAction(action); err != nil {
			parseErr = fmt.Errorf("failpoint: %s: %s: %v", EnvVar, name, err)
			return
		}
		actions[name] = action
	}
}

func checkAction(action string) error {
	switch {
	case action == "crash", action == "error", action == "panic":
		return nil
	case strings.HasPrefix(action, "sleep(") && strings.HasSuffix(action, ")"):
		d, err := time.ParseDuration(action[len("sleep(") : len(action)-1])
		if err != nil || d < 0 {
			return fmt.Errorf("bad sleep duration in %q (want a Go duration, zero or more)", action)
		}
		return nil
	case strings.HasPrefix(action, "wait(") && strings.HasSuffix(action, ")"):
		if len(action) == len("wait()") {
			return errors.New("wait() needs a path")
		}
		return nil
	}
	return fmt.Errorf("unknown action %q (want crash, error, panic, sleep(D) or wait(PATH))", action)
}

func check() (string, error) {
	parseOnce.Do(parse)
	spec := os.Getenv(EnvVar)
	if parseErr != nil {
		return spec, parseErr
	}
	for name := range actions {
		mu.Lock()
		_, known := points[name]
		mu.Unlock()
		if !known {
			return spec, fmt.Errorf("failpoint: %s: unknown failpoint %q (see 'majlis debug failpoints')", EnvVar, name)
		}
	}
	return spec, nil
}

func inject(name string) error {
	parseOnce.Do(parse)
	if parseErr != nil {
		return parseErr
	}
	action, ok := actions[name]
	if !ok {
		return nil
	}
	switch {
	case action == "crash":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not deliverable to a handler; wait for it
	case action == "error":
		return fmt.Errorf("%w at %s", ErrInjected, name)
	case action == "panic":
		panic("failpoint: injected panic at " + name)
	case strings.HasPrefix(action, "wait("):
		return wait(name, action[len("wait("):len(action)-1])
	default: // sleep(D), checked by parse
		d, _ := time.ParseDuration(action[len("sleep(") : len(action)-1])
		time.Sleep(d)
		return nil
	}
}

// waitLimit bounds a wait(PATH) action, so that a test that never releases
// the point cannot leave a process behind for ever.
const waitLimit = 5 * time.Minute

// wait announces that the process reached the point by creating
// PATH.reached, then pauses until PATH exists. A test synchronises on the
// first file and releases the process by creating the second: no sleep
// decides who goes first.
func wait(name, path string) error {
	f, err := os.OpenFile(path+".reached", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("failpoint: %s at %s: %w", EnvVar, name, err)
	}
	f.Close()
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w at %s: nobody created %s within %v", ErrInjected, name, path, waitLimit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
