package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newWorkspaceListCmd(g *globalOptions) *cobra.Command {
	opts := provider.ListOptions{Look: true}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the repository's workspaces, and which can be reclaimed",
		Long: `List the workspaces majlis allocated in this repository, with their state:
active, released, reclaiming, reclaimed (only with --all), missing (the
directory is gone) or damaged (its records cannot all be read: "damage" names
the file, the reason and where the workspace may be; 'majlis doctor' says
what to do).

For each workspace it also says whether its recorded owner process is alive
(owner_state: alive, exited or unknown), whether it is released, its leases
(count and the first few, with holder, expiry and whether they are
recoverable: their owner process is proven dead), the processes whose working
directory or open files are inside it (processes: a dev server that outlived
its agent), and whether a reclaim would go ahead now (reclaimable), else what
blocks it (blocked_by, each with a hint: the owner is alive, leases are held,
processes work inside it, another workspace lies inside it or it inside
another, its record is damaged, git's lock on it is someone else's, a reclaim
is under way). A crashed agent's workspace (begun with --owner-pid, the
process killed) is reclaimable: its leases' owner is dead, and the reclaim
retires them as recovered. This look reads no file of the workspaces and runs
no git there; a reclaim still judges everything again, and also what list
cannot see (a repository nested inside the workspace). --status adds each
workspace's change counts, one git status per workspace.`,
		Example: `  majlis workspace list
  majlis workspace list --status
  majlis workspace list --json | jq -r '.workspaces[] | select(.reclaimable) | .binding'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			list, err := p.List(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return g.emit(workspacesJSON{Workspaces: list, Summary: provider.Summarize(list)}, func(w io.Writer) {
				if len(list) == 0 {
					fmt.Fprintln(w, "no workspaces (allocate one with: majlis workspace allocate BINDING)")
					return
				}
				tw := table(w)
				header := "BINDING\tSTATE\tOWNER\tLEASES\tRECLAIM\tPATH"
				if opts.Status {
					header = "BINDING\tSTATE\tOWNER\tLEASES\tRECLAIM\tCHANGES\tPATH"
				}
				fmt.Fprintln(tw, header)
				for _, ws := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t", ws.Binding, ws.State, ownerCell(ws), leasesCell(ws), reclaimCell(ws))
					if opts.Status {
						fmt.Fprintf(tw, "%s\t", changesCell(ws))
					}
					fmt.Fprintf(tw, "%s\n", pathCell(ws))
				}
				tw.Flush()
				renderBlockHints(w, list)
			})
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "include reclaimed workspaces")
	cmd.Flags().BoolVar(&opts.Status, "status", false, "add each workspace's change counts (runs git status in each)")
	return cmd
}

func ownerCell(ws *provider.Workspace) string {
	if ws.OwnerPID == 0 {
		return "-"
	}
	return strconv.Itoa(ws.OwnerPID) + " " + ws.OwnerState
}

func leasesCell(ws *provider.Workspace) string {
	if ws.Leases == nil {
		return "-"
	}
	n := 0
	for _, l := range ws.Leases.First {
		if l.Recoverable {
			n++
		}
	}
	if n > 0 && n == ws.Leases.Count {
		return strconv.Itoa(ws.Leases.Count) + " recoverable"
	}
	return strconv.Itoa(ws.Leases.Count)
}

// blockHintsShown bounds the hint lines under the table.
const blockHintsShown = 5

// renderBlockHints says, under the table, how to resolve what blocks the
// first few workspaces held by leases or processes (--json has them all).
func renderBlockHints(w io.Writer, list []*provider.Workspace) {
	n := 0
	for _, ws := range list {
		for _, b := range ws.BlockedBy {
			if b.Hint == "" || b.Kind != provider.BlockLeases && b.Kind != provider.BlockProcesses {
				continue
			}
			if n == blockHintsShown {
				fmt.Fprintln(w, "(more in 'majlis workspace list --json': blocked_by[].hint)")
				return
			}
			n++
			fmt.Fprintf(w, "%s: %s\n  %s\n", ws.Binding, b.Detail, b.Hint)
		}
	}
}

// reclaimCell says in a word or two whether a reclaim would go ahead, and
// what blocks it.
func reclaimCell(ws *provider.Workspace) string {
	if ws.Reclaimable == nil {
		return "-"
	}
	if *ws.Reclaimable {
		return "yes"
	}
	var kinds []string
	for _, b := range ws.BlockedBy {
		kinds = append(kinds, strings.ReplaceAll(b.Kind, "_", " "))
	}
	return "no: " + strings.Join(kinds, ", ")
}

func changesCell(ws *provider.Workspace) string {
	if ws.Changes == nil {
		return "-"
	}
	if ws.Changes.Total() == 0 {
		return "clean"
	}
	return strconv.Itoa(ws.Changes.Total()) + " files"
}

func pathCell(ws *provider.Workspace) string {
	switch {
	case ws.Damage != nil:
		return "damaged record (majlis doctor)"
	case ws.State == provider.StateReclaimed && (ws.TrashPath != "" || ws.TrashEntry != ""):
		return trashCell(ws)
	case ws.State == provider.StateReclaimed && ws.SalvageRef != "":
		return "salvaged to " + ws.SalvageRef + purgedNote(ws)
	case ws.State == provider.StateReclaimed:
		return "-" + purgedNote(ws)
	}
	return humanPath(ws.Path)
}

// trashCell describes a kept trash folder, or git's entry of a
// workspace whose folder was gone kept in its stead: how old, how large,
// until when (its path, long, is in --json and in majlis gc --preview).
func trashCell(ws *provider.Workspace) string {
	s := "kept in its trash folder"
	if ws.TrashEntry != "" {
		s = "folder gone; git's record of it kept in the trash"
	}
	var facts []string
	if ws.ReclaimedAt != nil {
		facts = append(facts, time.Since(*ws.ReclaimedAt).Truncate(time.Second).String()+" old")
	}
	if ws.TrashSizeBytes != nil {
		facts = append(facts, byteSize(*ws.TrashSizeBytes))
	}
	if ws.TrashKeptUntil != nil {
		facts = append(facts, "until "+ws.TrashKeptUntil.Local().Format("2006-01-02 15:04"))
	}
	if ws.TrashMissing {
		facts = append(facts, "the folder is gone from "+humanPath(ws.TrashPath)+": moved or deleted by hand (majlis doctor says what to do)")
	}
	if ws.TrashHalfPurged {
		facts = append(facts, "half purged: majlis gc --purge-due finishes it")
	}
	if len(facts) > 0 {
		s += " (" + strings.Join(facts, ", ") + ")"
	}
	return s
}

// purgedNote says when a kept trash folder was purged early for space.
func purgedNote(ws *provider.Workspace) string {
	if ws.TrashPurged == provider.DueBudget || ws.TrashPurged == provider.DueSpace {
		return "; trash purged " + dueWords(ws.TrashPurged)
	}
	return ""
}
