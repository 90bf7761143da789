package client_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// The packages a program that speaks to a majlis server compiles
// (docs/design.md, "Packages"): wire imports the standard library only;
// serverctl and client import, besides it, only the lease files, their
// record format and the durable writes under them (with durable's
// environment values and failpoints), never the engine (provider, admission, gitops, pathid,
// server, coordination) nor git, SQLite, etcd or MCP libraries.
func TestImports(t *testing.T) {
	t.Parallel()
	const mod = "github.com/majlis-dev/majlis/"
	leaf := []string{mod + "wire", mod + "serverctl", mod + "client", mod + "reservation", mod + "internal/durable",
		mod + "internal/procid", mod + "internal/registration", mod + "internal/envvar", mod + "internal/failpoint",
		"golang.org/x/sys/unix", "github.com/gofrs/flock"}
	for pkg, allowed := range map[string][]string{
		"wire":      {mod + "wire"},
		"serverctl": leaf,
		"client":    leaf,
	} {
		out, err := fixtures.GoCommand("list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", mod+pkg).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		} else if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s listed nothing", pkg)
		}
		for _, d := range deps {
			ok := false
			for _, a := range allowed {
				ok = ok || d == a
			}
			if !ok {
				t.Errorf("%s compiles %s: it may import only %s and the standard library", pkg, d, strings.Join(allowed, ", "))
			}
		}
	}
}
