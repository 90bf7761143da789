package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func newWorkspaceReclaimCmd(g *globalOptions) *cobra.Command {
	var opts provider.ReclaimOptions
	var preview, released, dead bool
	cmd := &cobra.Command{
		Use: "reclaim [BINDING | --released | --dead]",
		// What people type for it: suggested alone (groups.go).
		SuggestFor: []string{"remove", "rm", "delete", "del", "destroy", "prune", "clean", "cleanup", "drop", "free"},
		Short:      "Salvage a workspace, move it aside and delete it, safely",
		Long: `Take BINDING's workspace back: salvage everything its removal would lose
except ignored files (its files, the index whole, commits only it holds,
per-worktree refs, an interrupted operation, hidden edits; see 'majlis
workspace salvage --help') to refs/majlis/salvage/BINDING/<n>, move the
directory with one rename into a trash folder beside it (nothing destructive
ever runs on the workspace's path), check it there and salvage anything
written meanwhile to a second ref, then keep the trash folder for the undo
window: the policy's trash.keep (default 24h; see 'majlis policy --help'),
or D with --keep-trash D. Until then 'majlis workspace restore BINDING
--from-trash' undoes the reclaim, ignored files included; afterwards a purge
(the server in the background, 'majlis gc', or this command once its result
is written) salvages what changed in it and deletes it. --keep-trash 0
deletes the trash folder at once. The branch is kept (the kept trash folder
lets go of it: its HEAD is detached); 'majlis workspace restore BINDING'
brings the workspace back from the salvage.

--preview shows what would be salvaged and why (each pinned commit with where
it was found, hidden edits, the ignored files that will be deleted), moved
and deleted, the retained peers checked, and a digest of it all; nothing
changes (a summary of it is kept in the state folder for a while, so that a
stale --confirm can say what changed since). --confirm
DIGEST proceeds only if the preview computed now has that digest (else exit 3,
preview_stale, saying what changed since that preview: files, peers, HEAD,
while its summary is kept, a day at most); a DIGEST that is not sha256: and
64 lowercase hex digits is a usage error (exit 2). --yes skips the comparison, never the checks. On a terminal,
without either, reclaim shows the preview and asks (y or yes proceeds); without a terminal it
refuses (exit 3, unconfirmed).

Before anything, reclaim refuses a workspace whose --owner-pid process is alive,
or whose task (or anyone working in it) holds leases, active or quarantined
(exit 4, workspace_live), whose directory or repository is not the one
allocated (exit 3), or that any retained peer overlaps: another workspace, a
worktree, the main worktree (unless it ignores the workspace's folder) or a
repository nested inside it (exit 3, peer_overlap). It holds a per-binding
reservation throughout and re-checks the reservation, the claim, the
directory and every peer immediately before the move, and checks again in the
trash that what it moved is the workspace (else it moves it back if the path
is free, and refuses with identity_drift). See docs/reclaim.md.`,
		Example: `  majlis workspace reclaim T-14 --preview
  majlis workspace reclaim T-14 --confirm sha256:4f1c...
  majlis workspace reclaim T-14 --yes --request-id cleanup-T-14 --json
  majlis workspace reclaim T-14 --yes --keep-trash 24h`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := checkReclaimFlags(cmd, args, &opts, preview, released, dead)
			if err != nil {
				return err
			}
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			if sel != "" {
				return runBulkReclaim(cmd, g, p, sel, preview, opts)
			}
			binding, fromCwd, err := g.bindingOf(p, args)
			if err != nil {
				return err
			}
			opts.Binding = binding
			if preview || (!opts.Yes && opts.Confirm == "" && !g.JSON && isTerminal(g.Stdin)) {
				pv, err := p.PreviewReclaim(cmd.Context(), opts.Binding)
				if err != nil {
					return err
				}
				if preview {
					return g.emit(previewJSON{Preview: pv, BindingFrom: bindingFrom(fromCwd)}, func(w io.Writer) { renderPreview(w, pv) })
				}
				if opts.Confirm, err = askReclaim(g, opts.Binding, pv); err != nil {
					return err
				}
			}
			return reclaimOne(cmd, g, p, opts, fromCwd)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&released, "released", false, "reclaim every released workspace (with --preview, then --confirm DIGEST)")
	f.BoolVar(&dead, "dead", false, "reclaim every workspace whose recorded owner is proven dead and that holds no lease (with --preview, then --confirm DIGEST)")
	f.BoolVar(&preview, "preview", false, "show what reclaim would do; change nothing")
	f.StringVar(&opts.Confirm, "confirm", "", "proceed only if the current preview has this digest")
	f.BoolVar(&opts.Yes, "yes", false, "proceed without comparing with a preview (the safety checks still run)")
	f.BoolVar(&opts.SalvageSubmodules, "salvage-submodules", false, "salvage dirty submodules too, instead of refusing")
	f.StringVar(&opts.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result or resumes")
	f.DurationVar(&opts.KeepTrash, "keep-trash", 0, "keep the moved workspace in its trash folder this long (a Go duration; 0 deletes it at once) instead of the policy's trash.keep")
	return cmd
}

// checkReclaimFlags refuses flags that do not go together, sets
// opts.DeleteTrash, and returns the bulk selection ("" for one
// workspace).
func checkReclaimFlags(cmd *cobra.Command, args []string, opts *provider.ReclaimOptions, preview, released, dead bool) (string, error) {
	if opts.KeepTrash < 0 {
		return "", &usageError{fmt.Errorf("--keep-trash must not be negative")}
	}
	// --keep-trash 0 deletes at once; without the flag the policy
	// decides.
	opts.DeleteTrash = cmd.Flags().Changed("keep-trash") && opts.KeepTrash == 0
	if preview && (opts.Yes || opts.Confirm != "") {
		return "", &usageError{fmt.Errorf("--preview cannot be combined with --confirm or --yes")}
	}
	if cmd.Flags().Changed("confirm") {
		if err := provider.CheckDigest(opts.Confirm); err != nil {
			return "", &usageError{err}
		}
	}
	sel := ""
	switch {
	case released && dead:
		return "", &usageError{fmt.Errorf("--released and --dead cannot be combined: reclaim one set at a time")}
	case released:
		sel = provider.SelectReleased
	case dead:
		sel = provider.SelectDead
	}
	if sel != "" && len(args) > 0 {
		return "", &usageError{fmt.Errorf("--%s selects the workspaces: name none", sel)}
	}
	if sel != "" && opts.Yes {
		return "", &usageError{fmt.Errorf("--%s needs --preview, then --confirm DIGEST: a bulk reclaim is never unconfirmed", sel)}
	}
	if sel != "" && !preview && opts.Confirm == "" {
		return "", &usageError{fmt.Errorf("--%s needs --preview or --confirm DIGEST", sel)}
	}
	return sel, nil
}

// askReclaim shows binding's preview on stderr and asks on the terminal;
// a yes confirms the preview's digest.
func askReclaim(g *globalOptions, binding string, pv *provider.Preview) (string, error) {
	writeFitted(g.Stderr, func(w io.Writer) { renderPreview(w, pv) })
	fmt.Fprintf(g.Stderr, "\nReclaim %s? [y/N] ", binding)
	answer, _ := bufio.NewReader(g.Stdin).ReadString('\n')
	if !confirmed(answer) {
		return "", &provider.Error{Op: "reclaim", Binding: binding, Err: provider.ErrUnconfirmed, Reason: "not confirmed"}
	}
	return pv.Digest, nil
}

// reclaimOne reclaims one workspace, confirmed, prints the result and
// then starts the purge of what is due.
func reclaimOne(cmd *cobra.Command, g *globalOptions, p *provider.Provider, opts provider.ReclaimOptions, fromCwd bool) error {
	// A reclaim interrupted (Ctrl-C) resumes with the same request id: one
	// is made up when none was given, and told if needed.
	generated := opts.RequestID == ""
	if generated {
		opts.RequestID = newRequestID("reclaim-" + opts.Binding)
	}
	res, err := p.Reclaim(cmd.Context(), opts)
	if err != nil {
		return withRequestID(err, opts.RequestID, generated)
	}
	err = g.emit(reclaimJSON{Reclaim: res, BindingFrom: bindingFrom(fromCwd)}, func(w io.Writer) { renderReclaim(w, res) })
	g.purgeAfter(cmd.Context(), p)
	return err
}

func renderPreview(w io.Writer, pv *provider.Preview) {
	tw := table(w)
	fmt.Fprintf(tw, "workspace\t%s at %s\n", pv.Binding, humanPath(pv.Path))
	released := "no"
	if pv.Released {
		released = "yes"
	}
	fmt.Fprintf(tw, "released\t%s\n", released)
	switch {
	case pv.OwnerPID == 0:
		fmt.Fprintf(tw, "owner\tnone recorded\n")
	case pv.OwnerState == "exited":
		fmt.Fprintf(tw, "owner\tpid %d exited\n", pv.OwnerPID)
	case pv.Released:
		fmt.Fprintf(tw, "owner\tpid %d %s; released, so it does not count\n", pv.OwnerPID, pv.OwnerState)
	default:
		fmt.Fprintf(tw, "owner\tpid %d %s\n", pv.OwnerPID, pv.OwnerState)
	}
	for _, l := range pv.RecoverLeases {
		fmt.Fprintf(tw, "recover\tlease %s %s of %s: its owner process %d is dead; released, recorded as recovered\n", l.ID, l.Resource, l.Holder, l.OwnerPID)
	}
	for _, pr := range pv.Processes {
		fmt.Fprintf(tw, "in use\t%s\n", processWords(pr))
	}
	if len(pv.Processes) > 0 {
		fmt.Fprintf(tw, "\tthe folder moves from under them into the kept trash; a bulk reclaim leaves this workspace out\n")
	}
	s := pv.Salvage
	if s.Clean {
		fmt.Fprintf(tw, "salvage\tnothing: no uncommitted work, nothing only this workspace holds\n")
	} else if s.Files == 0 {
		fmt.Fprintf(tw, "salvage\tno changed files; what only this workspace holds:\n")
	} else {
		fmt.Fprintf(tw, "salvage\t%d files: %d modified, %d added, %d deleted, %d renamed, %d untracked, %d conflicted\n",
			s.Files, s.Modified, s.Added, s.Deleted, s.Renamed, s.Untracked, s.Conflicted)
	}
	for _, h := range s.Hidden {
		fmt.Fprintf(tw, "  hidden\t%s (%s, %s): salvaged\n", h.Path, h.Flag, h.Change)
	}
	for _, p := range s.Pins {
		fmt.Fprintf(tw, "  pin\t%s, held only by %s\n", short(p.Commit, 12), p.Source)
	}
	for _, r := range s.WorktreeRefs {
		fmt.Fprintf(tw, "  keep\t%s (per-worktree ref)\n", r)
	}
	if s.Operation != "" {
		fmt.Fprintf(tw, "  keep\tthe state of the interrupted %s\n", s.Operation)
	}
	for i, f := range s.UnpopulatedSubmoduleFiles {
		if i == 10 {
			fmt.Fprintf(tw, "  keep\t(and %d more files in submodule folders)\n", len(s.UnpopulatedSubmoduleFiles)-i)
			break
		}
		fmt.Fprintf(tw, "  keep\t%s (in the folder of a submodule that is not checked out: git does not see it)\n", f)
	}
	for i, f := range s.RefusedNames {
		if i == 10 {
			fmt.Fprintf(tw, "  keep\t(and %d more files git will not store under their names)\n", len(s.RefusedNames)-i)
			break
		}
		fmt.Fprintf(tw, "  keep\t%s (a name git will not store: kept under an encoded name, restored as it is)\n", f)
	}
	if s.PartiallyStaged+s.IntentToAdd > 0 {
		fmt.Fprintf(tw, "  keep\tthe index: %d partially staged, %d intent-to-add\n", s.PartiallyStaged, s.IntentToAdd)
	}
	if pv.IgnoredFiles > 0 {
		more := ""
		if pv.IgnoredFiles > len(pv.IgnoredPaths) {
			more = fmt.Sprintf(" (and %d more)", pv.IgnoredFiles-len(pv.IgnoredPaths))
		}
		fmt.Fprintf(tw, "not salvaged\t%d ignored files, deleted: %s%s\n", pv.IgnoredFiles, strings.Join(pv.IgnoredPaths, ", "), more)
	}
	if pv.SpecialFiles > 0 {
		fmt.Fprintf(tw, "not salvaged\t%d special files (git cannot keep them), deleted: %s\n", pv.SpecialFiles, specialList(pv.SpecialFiles, pv.SpecialPaths))
	}
	if pv.TrashGoesAtOnce != "" {
		fmt.Fprintf(tw, "trash\tnot kept: deleted at once, because the policy would purge it at once (%s)\n", pv.TrashGoesAtOnce)
		fmt.Fprintf(tw, "\t%s\n", keepTrashWords(pv.TrashGoesAtOnce))
	}
	// The steps name the workspace and the folder beside it (its trash)
	// by absolute path; people read them as humanPath gives them.
	dir := filepath.Dir(pv.Path)
	paths := strings.NewReplacer(pv.Path, humanPath(pv.Path), dir+"/", strings.TrimSuffix(humanPath(dir), "/")+"/")
	for _, st := range pv.Steps {
		fmt.Fprintf(tw, "  %s\t%s\n", st.Name, paths.Replace(st.Detail))
	}
	fmt.Fprintf(tw, "peers checked\t%d, none overlapping\n", pv.PeersChecked)
	fmt.Fprintf(tw, "digest\t%s\n", pv.Digest)
	tw.Flush()
}

// processWords says how a process uses a workspace.
func processWords(pr provider.Process) string {
	switch pr.Use {
	case "file":
		return fmt.Sprintf("pid %d (%s) has %s open", pr.PID, pr.Command, humanPath(pr.Path))
	case "exe":
		return fmt.Sprintf("pid %d (%s) runs %s", pr.PID, pr.Command, humanPath(pr.Path))
	case "root":
		return fmt.Sprintf("pid %d (%s) has its root folder in it", pr.PID, pr.Command)
	}
	return fmt.Sprintf("pid %d (%s) works in %s", pr.PID, pr.Command, humanPath(pr.Path))
}

// specialList names special files with their types, and how many more
// there are than named.
func specialList(n int, named []salvage.SpecialFile) string {
	var b strings.Builder
	for i, f := range named {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", f.Path, strings.ReplaceAll(f.Type, "_", " "))
	}
	if n > len(named) {
		fmt.Fprintf(&b, " (and %d more)", n-len(named))
	}
	return b.String()
}

// isTerminal reports whether r (a reader or writer) is an interactive
// terminal.
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlReadTermios)
	return err == nil
}

// renderReclaim says what a reclaim did.
func renderReclaim(w io.Writer, res *provider.ReclaimResult) {
	fmt.Fprintf(w, "reclaimed %s: %s (branch %s kept)\n", res.Binding, strings.Join(res.StepsDone, ", "), res.Branch)
	if res.SalvageRef != nil {
		fmt.Fprintf(w, "salvaged to %s (majlis workspace restore %s brings it back)\n", *res.SalvageRef, res.Binding)
	}
	for _, l := range res.RecoveredLeases {
		fmt.Fprintf(w, "recovered lease %s %s of %s (its owner process %d was dead)\n", l.ID, l.Resource, l.Holder, l.OwnerPID)
	}
	if res.SecondSalvageRef != nil {
		fmt.Fprintf(w, "work written during the reclaim is on %s\n", *res.SecondSalvageRef)
	}
	if res.IgnoredFiles+res.SpecialFiles > 0 {
		fmt.Fprintf(w, "not salvaged: %d ignored files, %d special files (FIFOs, sockets, devices)\n", res.IgnoredFiles, res.SpecialFiles)
	}
	if res.TrashPath != "" {
		fmt.Fprintf(w, "the directory is kept in %s until %s\n", humanPath(res.TrashPath), res.TrashKeptUntil.Format(time.RFC3339))
	}
	if res.TrashNotKept != "" {
		fmt.Fprintf(w, "the trash was not kept: %s\n", res.TrashNotKept)
		if k := keepTrashWords(res.TrashNotKept); k != "" {
			fmt.Fprintln(w, k)
		}
	}
	if res.PathOccupied {
		fmt.Fprintf(w, "something new is at %s: left alone\n", humanPath(res.Path))
	}
}

// keepTrashWords says how to have the trash kept for the undo window when
// why (a preview's trash_goes_at_once, a result's trash_not_kept) names
// the policy key that purges it at once; "" otherwise.
func keepTrashWords(why string) string {
	for _, key := range []string{provider.PolicyTrashMinFree, provider.PolicyTrashMaxBytes} {
		if strings.Contains(why, key) {
			return "to keep the trash for the undo window: free disk space, or 'majlis policy set " + key + " VALUE' (see 'majlis policy show')"
		}
	}
	return ""
}
