package main

import (
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/cmd/majlis/internal/githook"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
)

// jsonPinned is every result type of the command line, with its JSON
// fields.
var jsonPinned = map[string]struct {
	v    any
	want []string
}{
	"repository":    {provider.Repository{}, []string{"common_dir", "id", "state_dir", "workspace_root"}},
	"pool":          {provider.PoolResult{}, []string{"created", "drained", "left", "pool", "stopped"}},
	"pool_use":      {provider.PoolUse{}, []string{"name", "reason", "used"}},
	"pool_worktree": {provider.PoolWorktree{}, []string{"base", "claim_digest", "created_at", "name", "path", "reason", "state", "taker"}},
	"workspace": {provider.Workspace{}, []string{"base", "binding", "blocked_by", "branch", "changes", "claim_digest",
		"created_at", "damage", "detached_from", "dirty", "dirty_submodules", "head", "id", "intent", "leases", "owner_alive", "owner_pid",
		"owner_state", "path", "physical_path", "pool", "processes", "reclaimable", "reclaimed_at", "released", "released_at", "request_id",
		"salvage_ref", "state", "trash_entry", "trash_half_purged", "trash_kept_until", "trash_missing", "trash_path", "trash_purged", "trash_purged_at", "trash_size_bytes"}},
	"blocker":       {provider.Blocker{}, []string{"detail", "hint", "kind", "leases", "owner_pid", "path", "peer", "processes"}},
	"lease_summary": {provider.LeaseSummary{}, []string{"count", "first"}},
	"lease_ref":     {provider.LeaseRef{}, []string{"expires_at", "holder", "id", "owner_pid", "recoverable", "resource", "state"}},
	"process":       {provider.Process{}, []string{"command", "path", "pid", "use"}},
	"counts": {gitops.Counts{}, []string{"added", "conflicted", "copied", "deleted", "ignored", "modified", "renamed",
		"staged", "type_changed", "untracked"}},
	"salvage": {provider.SalvageResult{}, []string{"binding", "changes", "clean", "commit", "counts", "dirty_submodules",
		"files", "hidden", "index_commit", "meta_commit", "nested_repositories", "operation", "pins", "ref", "special_files",
		"special_paths", "unpopulated_submodule_files", "worktree_refs"}},
	"preview": {provider.Preview{}, []string{"admin_entry", "binding", "branch", "changes", "claim_digest", "digest", "head", "ignored_files",
		"ignored_paths", "owner_pid", "owner_state", "path", "peers", "peers_checked", "physical_path", "processes", "recover_leases", "released", "salvage",
		"special_files", "special_paths", "steps", "trash_goes_at_once"}},
	"preview_salvage": {reflect.ValueOf(provider.Preview{}).FieldByName("Salvage").Interface(), []string{"added", "clean",
		"conflicted", "deleted", "dirty_submodules", "files", "hidden", "intent_to_add", "modified", "operation",
		"partially_staged", "pins", "refused_names", "renamed", "unpopulated_submodule_files", "untracked", "worktree_refs"}},
	"allocate": {provider.AllocateResult{}, []string{"leases", "ports", "token", "workspace"}},
	"restore": {provider.RestoreResult{}, []string{"branch", "commit", "head", "layout", "not_restored", "restored",
		"salvage_ref", "unborn", "workspace"}},
	"pin":     {gitops.Pin{}, []string{"commit", "source"}},
	"hidden":  {salvage.HiddenFile{}, []string{"change", "flag", "path"}},
	"special": {salvage.SpecialFile{}, []string{"path", "type"}},
	"reclaim": {provider.ReclaimResult{}, []string{"binding", "branch", "ignored_files", "path", "path_occupied", "pinned_on_first_contact", "recovered_leases", "removed", "salvage_ref",
		"salvage_refs", "salvaged_submodules", "second_salvage_ref", "special_files", "steps_done", "trash_kept_until", "trash_not_kept", "trash_path", "trash_purged"}},
	"damage":     {provider.Damage{}, []string{"binding", "file", "located", "paths", "reason", "unlocated"}},
	"known_path": {provider.KnownPath{}, []string{"path", "source"}},
	"doctor":     {provider.DoctorReport{}, []string{"checked", "common_dir", "findings", "ok", "state_dir", "trash"}},
	"kept_trash": {provider.KeptTrash{}, []string{"age", "binding", "branch", "due", "entry", "half_purged", "kept_until", "missing", "path", "reclaimed_at",
		"salvage_refs", "seq", "size_bytes"}},
	"purge":         {provider.PurgeResult{}, []string{"left", "pool_drained", "purged"}},
	"purged_trash":  {provider.PurgedTrash{}, []string{"binding", "due", "path", "reason", "recycled", "salvage_ref", "seq"}},
	"finding":       {provider.Finding{}, []string{"binding", "code", "fix", "message", "path", "repairable", "severity"}},
	"repair":        {provider.RepairResult{}, []string{"actions", "digest", "done", "preview"}},
	"repair_action": {provider.RepairAction{}, []string{"binding", "detail", "files", "fingerprint", "kind", "path", "salvage"}},
	"repair_done":   {provider.RepairDone{}, []string{"binding", "kind", "moved_to", "path", "salvage_refs"}},
	"peer":          {provider.Peer{}, []string{"binding", "kind", "overlaps", "path", "relation"}},
	"step":          {provider.Step{}, []string{"count", "detail", "name"}},
	"lease":         {reservation.Record{}, []string{"acquired_at", "authority_digest", "expires_at", "format", "generation", "metadata", "owner", "purpose", "renewed_at", "resource", "token"}},
	"owner":         {procid.Owner{}, []string{"boot_id", "hostname", "machine_id", "pid", "pid_namespace", "start_time"}},

	// Leases and admission.
	"admission_lease": {admission.Lease{}, []string{"acquired_at", "checkout", "clone", "expires_at", "forced", "generation", "holder", "id",
		"key", "owner_pid", "recoverable", "released_at", "resolved_at", "resolved_how", "resource", "scope", "state"}},
	"acquire":  {admission.AcquireResult{}, []string{"decided_by", "leases", "ports", "replayed", "request_id", "reused", "token", "warnings"}},
	"renew":    {admission.RenewResult{}, []string{"leases", "replayed", "request_id", "warnings"}},
	"release":  {admission.ReleaseResult{}, []string{"leases", "replayed", "request_id"}},
	"warning":  {admission.Warning{}, []string{"code", "lease", "message", "policy", "resource"}},
	"conflict": {admission.Conflict{}, []string{"lease", "policy", "reason", "recoverable", "resource"}},
	"check": {provider.CheckResult{}, []string{"changed", "checkout", "decided_by", "gaps", "holder", "holder_source",
		"policy", "skipped", "warnings"}},
	"policy": {provider.PolicyView{}, []string{"coordination", "cross_worktree_overlap", "enforcement_gap", "pool.keep_ignored", "pool.max_bytes", "pool.size", "port_range", "same_checkout_conflict",
		"trash.keep", "trash.max_bytes", "trash.min_free"}},
	"hook": {githook.Result{}, []string{"backup", "changed", "hooks_dir", "majlis", "path"}},
	"begin": {provider.BeginResult{}, []string{"checkout", "decided_by", "leases", "ports", "replayed", "request_id", "task",
		"token", "warnings", "workspace"}},

	// gc.
	"gc_plan": {provider.GCPlan{}, []string{"branches", "branches_kept", "deleted_age", "deleted_tips", "digest", "record_age",
		"records", "salvage_age", "salvage_refs", "trash", "trash_kept"}},
	"gc_trash":  {provider.GCTrash{}, []string{"binding", "due", "kept_until", "path", "seq"}},
	"gc":        {provider.GCResult{}, []string{"branches", "deleted_tips", "digest", "records", "salvage_refs", "skipped", "trash"}},
	"gc_record": {provider.GCRecord{}, []string{"at", "binding", "claim_digest", "outcome", "path", "seq"}},

	// The server: status, start/attach, stop, and the liveness route's body.
	"server_status": {serverctl.Status{}, []string{"address", "api", "busy", "generation", "lease", "owner", "pid", "ready",
		"reason", "repository", "start_time", "status", "version"}},
	"server_start": {serverctl.StartResult{}, []string{"log", "recovered", "server", "started"}},
	"server_stop":  {serverctl.StopResult{}, []string{"server", "signals", "stopped"}},
	"server_live": {wire.Live{}, []string{"api", "busy", "connections", "hmac", "holder", "max_connections", "max_handlers", "nonce", "pid", "reading", "ready",
		"repository", "start_time", "token_sha256", "version", "waiting"}},

	// details.changed of preview_stale.
	"preview_changes": {provider.PreviewChanges{}, []string{"admin_entry", "branch", "claim", "counts", "files_added", "files_changed",
		"files_listed", "files_removed", "head", "peers_added", "peers_changed", "peers_removed", "pinned", "released"}},
	"file_change":  {provider.FileChange{}, []string{"from", "path", "to"}},
	"count_change": {provider.CountChange{}, []string{"from", "to"}},
	"value_change": {provider.ValueChange{}, []string{"from", "to"}},
}

// The JSON fields of every result are part of the CLI contract (docs/cli.md):
// fields may be added, never renamed or removed. This test pins them; add
// new fields to the lists, never delete from them.
func TestJSONFieldsArePinned(t *testing.T) {
	t.Parallel()
	for name, tc := range jsonPinned {
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

// Arrays are always present in every --json result (docs/cli.md): empty,
// never omitted. No slice field of a result, nor of what it holds, has
// omitempty (a nil slice must also be made empty where the result is
// built: the goldens of TestScripts show it).
func TestJSONArraysAlwaysPresent(t *testing.T) {
	t.Parallel()
	seen := map[reflect.Type]bool{}
	var walk func(rt reflect.Type, path string)
	walk = func(rt reflect.Type, path string) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Array || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || seen[rt] || rt.PkgPath() == "time" {
			return
		}
		seen[rt] = true
		for i := range rt.NumField() {
			f := rt.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			k := f.Type.Kind()
			if (k == reflect.Slice || k == reflect.Array) && strings.Contains(opts, "omitempty") {
				t.Errorf("%s.%s (%s): an array with omitempty; arrays are always present", path, name, rt.Name())
			}
			walk(f.Type, path+"."+name)
		}
	}
	for name, tc := range jsonPinned {
		walk(reflect.TypeOf(tc.v), name)
	}
	// The command line's own envelopes.
	for name, v := range map[string]any{"bulk_reclaim": bulkReclaimJSON{}, "end": endJSON{}, "workspaces": workspacesJSON{},
		"doctor": doctorJSON{}, "repair": repairJSON{}} {
		walk(reflect.TypeOf(v), name)
	}
}

// fieldNames lists the JSON keys of the struct v, from its field tags,
// with those of embedded structs as encoding/json promotes them.
func fieldNames(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	collectFields(t, reflect.TypeOf(v), &out)
	sort.Strings(out)
	return out
}

func collectFields(t *testing.T, rt reflect.Type, out *[]string) {
	t.Helper()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			collectFields(t, et, out)
			continue
		}
		if name == "" {
			t.Fatalf("%s.%s has no json tag: every result field needs a snake_case name", rt.Name(), f.Name)
		}
		*out = append(*out, name)
	}
}

// arrayKeys are the JSON keys of the results' array fields
// (jsonPinned), and their envelopes'.
var arrayKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(rt reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || seen[rt] {
			return
		}
		seen[rt] = true
		for i := range rt.NumField() {
			f := rt.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.IsExported() && name != "-" && name != "" && f.Type.Kind() == reflect.Slice {
				keys[name] = true
			}
			walk(f.Type)
		}
	}
	for _, tc := range jsonPinned {
		walk(reflect.TypeOf(tc.v))
	}
	return keys
})

// nullArray returns a key of v (decoded JSON) whose value is null and
// which names an array of some result, or "".
func nullArray(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil && arrayKeys()[k] {
				return k
			}
			if k := nullArray(x); k != "" {
				return k
			}
		}
	case []any:
		for _, x := range v {
			if k := nullArray(x); k != "" {
				return k
			}
		}
	}
	return ""
}
