package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/pathid"
)

// judgePeers decides from the collected facts alone.
func TestJudgePeers(t *testing.T) {
	t.Parallel()
	inside := pathid.Overlap{Relation: pathid.AContainsB, Form: pathid.FormLexical, A: "/w/t", B: "/w/t/in"}
	around := pathid.Overlap{Relation: pathid.BContainsA, Form: pathid.FormLexical, A: "/w/t", B: "/w"}
	same := pathid.Overlap{Relation: pathid.Equal, Form: pathid.FormPhysical, A: "/w/t", B: "/x/t"}
	for _, tc := range []struct {
		name string
		c    peerCandidate
		want Peer
	}{
		{"disjoint", peerCandidate{Kind: PeerWorkspace, Path: "/w/u", Binding: "U", Overlap: pathid.Overlap{Relation: pathid.Disjoint}},
			Peer{Kind: PeerWorkspace, Path: "/w/u", Binding: "U", Relation: "disjoint"}},
		{"unresolvable", peerCandidate{Kind: PeerWorktree, Path: "/w/loop", Unresolvable: "too many links"},
			Peer{Kind: PeerWorktree, Path: "/w/loop", Relation: "unresolvable: too many links", Overlaps: true}},
		{"inside the target", peerCandidate{Kind: PeerWorkspace, Path: "/w/t/in", Binding: "I", Overlap: inside},
			Peer{Kind: PeerWorkspace, Path: "/w/t/in", Binding: "I", Relation: inside.String(), Overlaps: true}},
		{"same place", peerCandidate{Kind: PeerWorktree, Path: "/x/t", Overlap: same},
			Peer{Kind: PeerWorktree, Path: "/x/t", Relation: same.String(), Overlaps: true}},
		{"around, ignoring it", peerCandidate{Kind: PeerMainWorktree, Path: "/w", Overlap: around, Ignores: "git check-ignore t/"},
			Peer{Kind: PeerMainWorktree, Path: "/w", Relation: "contains the target, which it ignores (git check-ignore t/)"}},
		{"around, not ignoring it", peerCandidate{Kind: PeerMainWorktree, Path: "/w", Overlap: around},
			Peer{Kind: PeerMainWorktree, Path: "/w", Relation: "contains the target (" + around.String() + ")", Overlaps: true}},
		{"a nested repository never counts as ignoring", peerCandidate{Kind: PeerNestedRepo, Path: "/w", Overlap: around, Ignores: "x"},
			Peer{Kind: PeerNestedRepo, Path: "/w", Relation: "contains the target (" + around.String() + ")", Overlaps: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgePeers(&peerFacts{Candidates: []peerCandidate{tc.c}})
			if diff := cmp.Diff([]Peer{tc.want}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := judgePeers(&peerFacts{}); got == nil || len(got) != 0 {
		t.Errorf("no candidates: %#v, want an empty list", got)
	}
}
