package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newGCCmd(g *globalOptions) *cobra.Command {
	var opts provider.GCOptions
	var preview, purgeDue bool
	cmd := &cobra.Command{
		Use:   "gc [--preview | --confirm DIGEST | --purge-due]",
		Short: "Delete what majlis left behind and no longer needs, after a preview",
		Long: `Delete what majlis left behind and no longer needs. --preview lists all of it
with a digest and changes nothing; --confirm DIGEST deletes exactly that, each
ref only at the value the preview showed (what changed since is left and
reported under "skipped").

  branches      branches majlis created (never one it checked out as it was,
                allocate --checkout), whose workspaces are all reclaimed, that
                no worktree has checked out, and that are merged into the base
                they were allocated from or the upstream they track: merged,
                fast-forwarded or squash-merged (a commit there has the
                branch's tree, or its whole change as one patch). A doubt
                keeps the branch. Each
                tip is kept under refs/majlis/deleted/BRANCH/<time> for
                --deleted-age first (deleting a branch deletes its reflog).
  salvage refs  a salvage identical (tree and parents) to another of the same
                workspace that no record names (a salvage followed by a
                reclaim leaves two); salvages older than --salvage-age of
                workspaces that are gone, but the newest of each.
  deleted tips  refs/majlis/deleted/... kept longer than --deleted-age.
  trash         trash folders a reclaim kept for the undo window that are due:
                their time is up (trash.keep, or --keep-trash), a purge of
                them was interrupted, or they go early, oldest first, because
                the kept trash is larger than trash.max_bytes or the free
                space is below trash.min_free. Each is salvaged again first
                (what changed in it since the reclaim goes to a salvage ref);
                one whose salvage fails is left whole. The same goes for
                git's record of a workspace whose folder was already gone
                when it was reclaimed, kept in majlis's trash. The preview
                lists every kept trash with its age and size.
  records       the records of workspaces reclaimed (or allocations failed)
                longer than --record-age ago are compacted: moved, whole,
                out of the folder every command reads, into the state
                folder's compacted records (nothing is deleted). Each
                workspace's newest record stays, and so does any record
                whose workspace or trash folder may still be there or whose
                salvage still exists.

Without --preview or --confirm, on a terminal gc shows the preview and asks
(y or yes proceeds); without a terminal it refuses (exit 3, unconfirmed).

--purge-due purges the kept trash that is due now, and nothing else, without
a preview: the policy decided it, and each is salvaged first. It is what the
server does in the background, and what a reclaim starts once its result is
written when no server runs.`,
		Example: `  majlis gc --preview
  majlis gc --confirm sha256:4f1c...
  majlis gc --preview --json | jq '.gc_preview.branches[].branch'
  majlis gc --purge-due`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkGCFlags(cmd, opts, preview, purgeDue); err != nil {
				return err
			}
			return runGC(cmd, g, opts, preview, purgeDue)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&preview, "preview", false, "list what gc would delete, with a digest; change nothing")
	f.BoolVar(&purgeDue, "purge-due", false, "purge the kept trash that is due now (each salvaged first), and nothing else")
	f.StringVar(&opts.Confirm, "confirm", "", "delete exactly what the preview with this digest listed")
	f.DurationVar(&opts.SalvageAge, "salvage-age", provider.DefaultSalvageAge, "prune salvages of gone workspaces older than this (the newest of each is kept)")
	f.DurationVar(&opts.DeletedAge, "deleted-age", provider.DefaultDeletedAge, "keep the tips of deleted branches this long")
	f.DurationVar(&opts.RecordAge, "record-age", provider.DefaultRecordAge, "compact the records of workspaces finished longer ago than this")
	return cmd
}

// runGC is gc once its flags are checked: the purge of what is due, or
// the preview, or the gc of a confirmed preview (asked on a terminal).
func runGC(cmd *cobra.Command, g *globalOptions, opts provider.GCOptions, preview, purgeDue bool) error {
	p, err := g.openProvider(cmd.Context())
	if err != nil {
		return err
	}
	defer p.Close()
	if purgeDue {
		return runPurgeDue(cmd, g, p)
	}
	if preview || opts.Confirm == "" {
		plan, err := p.PreviewGC(cmd.Context(), opts)
		if err != nil {
			return err
		}
		if preview {
			return g.emit(gcPreviewJSON{GCPreview: plan}, func(w io.Writer) { renderGCPlan(w, plan) })
		}
		if g.JSON || !isTerminal(g.Stdin) {
			return &provider.Error{Op: "gc", Err: provider.ErrUnconfirmed,
				Hint: "run with --preview, then --confirm DIGEST"}
		}
		writeFitted(g.Stderr, func(w io.Writer) { renderGCPlan(w, plan) })
		if !askYes(g, "Delete all of it?") {
			return &provider.Error{Op: "gc", Err: provider.ErrUnconfirmed, Reason: "not confirmed"}
		}
		opts.Confirm = plan.Digest
	}
	res, err := p.GC(cmd.Context(), opts)
	if err != nil {
		return err
	}
	return g.emit(gcJSON{GC: res}, func(w io.Writer) { renderGC(w, res) })
}

// checkGCFlags refuses ages below zero and flags that do not go
// together.
func checkGCFlags(cmd *cobra.Command, opts provider.GCOptions, preview, purgeDue bool) error {
	if opts.SalvageAge < 0 || opts.DeletedAge < 0 || opts.RecordAge < 0 {
		return &usageError{fmt.Errorf("--salvage-age, --deleted-age and --record-age must not be negative")}
	}
	if preview && opts.Confirm != "" {
		return &usageError{fmt.Errorf("--preview cannot be combined with --confirm")}
	}
	if purgeDue && (preview || opts.Confirm != "") {
		return &usageError{fmt.Errorf("--purge-due cannot be combined with --preview or --confirm")}
	}
	if cmd.Flags().Changed("confirm") {
		if err := provider.CheckDigest(opts.Confirm); err != nil {
			return &usageError{err}
		}
	}
	return nil
}

func renderGCPlan(w io.Writer, plan *provider.GCPlan) {
	tw := table(w)
	for _, b := range plan.Branches {
		fmt.Fprintf(tw, "delete branch\t%s (of %s): merged into %s (%s); tip %s kept under %s\n", b.Branch, b.Binding, b.Into, mergedWords(b.How), short(b.Tip, 12), b.KeptAs)
	}
	for _, k := range plan.BranchesKept {
		fmt.Fprintf(tw, "keep branch\t%s: %s\n", k.Branch, k.Reason)
	}
	for _, r := range plan.SalvageRefs {
		fmt.Fprintf(tw, "delete salvage\t%s: %s\n", r.Ref, r.Reason)
	}
	for _, r := range plan.DeletedTips {
		fmt.Fprintf(tw, "delete kept tip\t%s: %s\n", r.Ref, r.Reason)
	}
	for _, k := range plan.TrashKept {
		what := "kept trash"
		if k.Due != "" {
			what = "delete trash"
		}
		fmt.Fprintf(tw, "%s\t%s\n", what, keptLine(k))
	}
	for _, c := range countRecords(plan.Records) {
		fmt.Fprintf(tw, "compact records\t%s of %s (%s)\n", plural(c.n, "old record", "old records"), c.binding, seqRuns(c.seqs))
	}
	if len(plan.Branches)+len(plan.SalvageRefs)+len(plan.DeletedTips)+len(plan.Trash)+len(plan.Records) == 0 {
		fmt.Fprintf(tw, "nothing to delete\t\n")
	}
	fmt.Fprintf(tw, "digest\t%s\n", plan.Digest)
	tw.Flush()
}

func mergedWords(how string) string {
	switch how {
	case "ancestor":
		return "its tip is in it"
	case "tree":
		return "squash-merged: a commit there has its tree"
	case "patch-id":
		return "squash-merged: a commit there has its whole change"
	}
	return how
}

// A recordCount is how many records gc compacts of one binding.
type recordCount struct {
	binding string
	n       int
	seqs    []int
}

// countRecords counts records by binding, in the order given.
func countRecords(recs []provider.GCRecord) []recordCount {
	var out []recordCount
	for _, r := range recs {
		if len(out) == 0 || out[len(out)-1].binding != r.Binding {
			out = append(out, recordCount{binding: r.Binding})
		}
		c := &out[len(out)-1]
		c.n++
		c.seqs = append(c.seqs, r.Seq)
	}
	return out
}

// seqRuns renders ascending record numbers as runs: "#1, #3 to #5".
func seqRuns(seqs []int) string {
	var parts []string
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprintf("#%d", seqs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("#%d to #%d", seqs[i], seqs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// renderGC says what gc did.
func renderGC(w io.Writer, res *provider.GCResult) {
	for _, b := range res.Branches {
		fmt.Fprintf(w, "deleted branch %s (merged into %s; its tip is kept as %s)\n", b.Branch, b.Into, b.KeptAs)
	}
	for _, r := range res.SalvageRefs {
		fmt.Fprintf(w, "deleted %s: %s\n", r.Ref, r.Reason)
	}
	for _, r := range res.DeletedTips {
		fmt.Fprintf(w, "deleted %s: %s\n", r.Ref, r.Reason)
	}
	for _, t := range res.Trash {
		fmt.Fprintf(w, "deleted the trash folder %s of %s (%s)\n", humanPath(t.Path), t.Binding, dueWords(t.Due))
	}
	for _, c := range countRecords(res.Records) {
		fmt.Fprintf(w, "compacted %s of %s\n", plural(c.n, "old record", "old records"), c.binding)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "left %s: %s\n", s.Branch, s.Reason)
	}
	n := len(res.Branches) + len(res.SalvageRefs) + len(res.DeletedTips) + len(res.Trash) + len(res.Records)
	if n == 0 && len(res.Skipped) == 0 {
		fmt.Fprintln(w, "nothing to delete")
	}
}
