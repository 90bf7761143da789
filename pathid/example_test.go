package pathid_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/pathid"
)

func ExampleOverlaps() {
	dir, err := os.MkdirTemp("", "pathid-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// repo/.worktrees/t14 is a workspace; shortcut is a symlink to it.
	ws := filepath.Join(dir, "repo", ".worktrees", "t14")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.Symlink(ws, filepath.Join(dir, "shortcut")); err != nil {
		log.Fatal(err)
	}

	for _, pair := range [][2]string{
		{"repo", "repo/.worktrees/t14"},               // nested
		{"repo/.worktrees/t1", "repo/.worktrees/t14"}, // a shared prefix is not containment
		{"shortcut/new/dir", "repo/.worktrees/t14"},   // only physically, below a symlink
	} {
		a, b := filepath.Join(dir, pair[0]), filepath.Join(dir, pair[1])
		overlaps, err := pathid.Overlaps(a, b)
		if err != nil {
			log.Fatal(err)
		}
		o, _ := pathid.Compare(a, b)
		fmt.Printf("%s / %s: %v (%v, %v)\n", pair[0], pair[1], overlaps, o.Relation, o.Form)
	}
	// Output:
	// repo / repo/.worktrees/t14: true (a_contains_b, lexical)
	// repo/.worktrees/t1 / repo/.worktrees/t14: false (disjoint, none)
	// shortcut/new/dir / repo/.worktrees/t14: true (b_contains_a, physical)
}
