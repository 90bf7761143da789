package main

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/reservation"
)

// The JSON fields of every result are part of the CLI contract (CLI.md):
// fields may be added, never renamed or removed. This test pins them; add
// new fields to the lists, never delete from them.
func TestJSONFieldsArePinned(t *testing.T) {
	for name, tc := range map[string]struct {
		v    any
		want []string
	}{
		"repository": {provider.Repository{}, []string{"common_dir", "id", "state_dir", "workspace_root"}},
		"workspace": {provider.Workspace{}, []string{"base", "binding", "branch", "changes", "claim_digest",
			"created_at", "dirty", "dirty_submodules", "head", "id", "intent", "owner_pid", "path", "physical_path",
			"reclaimed_at", "released_at", "request_id", "salvage_ref", "state"}},
		"salvage": {provider.SalvageResult{}, []string{"binding", "clean", "commit", "counts", "dirty_submodules",
			"files", "nested_repositories", "ref"}},
		"preview": {provider.Preview{}, []string{"binding", "branch", "claim_digest", "digest", "head", "ignored_files",
			"path", "peers", "peers_checked", "physical_path", "released", "salvage", "steps"}},
		"reclaim": {provider.ReclaimResult{}, []string{"binding", "branch", "path", "removed", "salvage_ref",
			"salvage_refs", "salvaged_submodules", "steps_done"}},
		"peer":  {provider.Peer{}, []string{"binding", "kind", "overlaps", "path", "relation"}},
		"step":  {provider.Step{}, []string{"count", "detail", "name"}},
		"lease": {reservation.Record{}, []string{"acquired_at", "authority_digest", "expires_at", "format", "generation", "metadata", "owner", "purpose", "renewed_at", "resource", "token"}},
		"owner": {reservation.Owner{}, []string{"boot_id", "hostname", "machine_id", "pid", "pid_namespace", "start_time"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := fieldNames(t, tc.v)
			missing := []string{}
			have := map[string]bool{}
			for _, f := range got {
				have[f] = true
			}
			for _, f := range tc.want {
				if !have[f] {
					missing = append(missing, f)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%s lost JSON fields %v (renaming or removing a field breaks scripts)", name, missing)
			}
			sort.Strings(tc.want)
			if diff := cmp.Diff(tc.want, got); diff != "" && len(missing) == 0 {
				t.Errorf("%s has new JSON fields: add them to this test (-pinned +now):\n%s", name, diff)
			}
		})
	}
}

// fieldNames lists the JSON keys of the struct v, from its field tags.
func fieldNames(t *testing.T, v any) []string {
	t.Helper()
	rt := reflect.TypeOf(v)
	var out []string
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			t.Fatalf("%s.%s has no json tag: every result field needs a snake_case name", rt.Name(), f.Name)
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
