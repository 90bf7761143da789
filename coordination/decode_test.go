package coordination

import (
	"encoding/json"
	"testing"

	"github.com/majlis-dev/majlis/admission"
)

// FuzzDecode: a record read from etcd is either refused (malformed, naming
// its key) or valid: scope intent or cluster, with an id that is its key's
// last component, a holder and a clone; decoding never panics.
func FuzzDecode(f *testing.F) {
	good, _ := json.Marshal(admission.SharedRecord{ID: "L-0123456789abcdef", Scope: admission.ScopeIntent, Resource: "intent:src/**",
		Key: "src", Subtree: true, Clone: "C", Holder: "T-1"})
	f.Add("/majlis/repo/k/rec/L-0123456789abcdef", string(good))
	f.Add("/majlis/cluster/rec/x", `{"id":"x","scope":"cluster","holder":"h","clone":"c","extra":1}`)
	f.Add("/k/rec/x", `{"id":"x"`)
	l := &Ledger{o: Options{Endpoints: []string{"http://127.0.0.1:1"}, RepositoryKey: "k"}}
	f.Fuzz(func(t *testing.T, key, value string) {
		r, err := l.decode([]byte(key), []byte(value))
		if err != nil {
			return
		}
		if r.ID == "" || r.Holder == "" || r.Clone == "" || (r.Scope != admission.ScopeIntent && r.Scope != admission.ScopeCluster) {
			t.Fatalf("accepted %q as %+v", value, r)
		}
	})
}
