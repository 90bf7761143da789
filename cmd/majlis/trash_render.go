package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

// purgeJSON is the result of gc --purge-due.
type purgeJSON struct {
	Purge *provider.PurgeResult `json:"purge"`
}

// runPurgeDue purges the kept trash that is due (gc --purge-due).
func runPurgeDue(cmd *cobra.Command, g *globalOptions, p *provider.Provider) error {
	res, err := p.PurgeDue(cmd.Context())
	if err != nil {
		return err
	}
	return g.emit(purgeJSON{Purge: res}, func(w io.Writer) { renderPurge(w, res) })
}

// renderPurge says what a purge of the due trash did.
func renderPurge(w io.Writer, res *provider.PurgeResult) {
	for _, t := range res.Purged {
		if t.Recycled != "" {
			fmt.Fprintf(w, "recycled the kept trash %s of %s into the warm pool as %s (%s)", humanPath(t.Path), t.Binding, t.Recycled, dueWords(t.Due))
		} else {
			fmt.Fprintf(w, "deleted the kept trash %s of %s (%s)", humanPath(t.Path), t.Binding, dueWords(t.Due))
		}
		if t.SalvageRef != "" {
			fmt.Fprintf(w, "; what changed in it since the reclaim is on %s", t.SalvageRef)
		}
		fmt.Fprintln(w)
	}
	for _, t := range res.Left {
		fmt.Fprintf(w, "left the kept trash %s of %s: %s", humanPath(t.Path), t.Binding, t.Reason)
		if t.SalvageRef != "" {
			fmt.Fprintf(w, "; what changed in it since the reclaim is on %s", t.SalvageRef)
		}
		fmt.Fprintln(w)
	}
	for _, d := range res.PoolDrained {
		fmt.Fprintf(w, "gave back the pooled worktree %s for space, before any kept trash\n", humanPath(d.Path))
	}
	if len(res.Purged)+len(res.Left)+len(res.PoolDrained) == 0 {
		fmt.Fprintln(w, "no kept trash is due")
	}
}

// keptLine describes a kept trash folder (or git's entry of a workspace
// whose folder was gone, kept in its stead) on one line.
func keptLine(k provider.KeptTrash) string {
	size := "size unknown"
	switch {
	case k.Missing:
		size = "the folder is gone: moved or deleted by hand (majlis doctor says what to do)"
	case k.SizeBytes >= 0:
		size = byteSize(k.SizeBytes)
	}
	of := "of " + k.Binding
	if k.Entry {
		of = "git's record of " + k.Binding + ", whose folder was gone"
	}
	s := fmt.Sprintf("%s (%s, reclaimed %s ago, %s, kept until %s)", humanPath(k.Path), of, k.Age, size, k.KeptUntil.Format("2006-01-02 15:04"))
	if k.Due != "" {
		s += ": " + dueWords(k.Due)
	}
	return s
}

// dueWords says why a kept trash goes.
func dueWords(due string) string {
	switch due {
	case provider.DueExpired:
		return "its time is up"
	case provider.DueBudget:
		return "early: the kept trash is larger than trash.max_bytes, oldest first"
	case provider.DueSpace:
		return "early: the free disk space is below trash.min_free, oldest first"
	case provider.DueInterrupted:
		return "finishing a purge that was interrupted"
	}
	return due
}

// byteSize renders a size for people: 1.5 GiB, 320.0 MiB, 80 B.
func byteSize(n int64) string { return provider.ByteSize(n) }
