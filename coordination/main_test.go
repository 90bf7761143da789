package coordination_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/majlis-dev/majlis/coordination/etcdtest"
	"github.com/majlis-dev/majlis/fixtures"
)

func TestMain(m *testing.M) {
	code := 0
	func() {
		defer etcdtest.StopShared()
		home, err := fixtures.Isolate()
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(home)
		code = m.Run()
	}()
	os.Exit(code)
}

// cloneOf names a clone after its state folder.
func cloneOf(stateDir string) string {
	h := sha256.Sum256([]byte(stateDir))
	return "C-" + hex.EncodeToString(h[:6])
}
