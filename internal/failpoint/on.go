//go:build failpoints

package failpoint

import (
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
		actions[strings.TrimSpace(name)] = strings.TrimSpace(action)
	}
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
	case strings.HasPrefix(action, "sleep(") && strings.HasSuffix(action, ")"):
		d, err := time.ParseDuration(action[len("sleep(") : len(action)-1])
		if err != nil {
			return fmt.Errorf("failpoint: %s: bad sleep duration in %q: %v", EnvVar, action, err)
		}
		time.Sleep(d)
		return nil
	default:
		return fmt.Errorf("failpoint: %s: unknown action %q for %s (want crash, error or sleep(D))", EnvVar, action, name)
	}
}
