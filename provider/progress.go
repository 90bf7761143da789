package provider

import (
	"context"
	"io"

	"github.com/majlis-dev/majlis/gitops"
)

// Progress: a long operation says which step it is at, for a person
// watching (the CLI shows it on a terminal's stderr once an operation has
// taken more than about a second). It is information only: a Provider
// without a progress function says nothing, and nothing depends on it.

// A Progress is one step of a long operation.
type Progress struct {
	Op      string `json:"op"`      // allocate, salvage, reclaim
	Binding string `json:"binding"` // the workspace concerned
	Step    string `json:"step"`    // in words: "salvaging 120 changed files"
	// Done and Total count the workspaces of a bulk reclaim (0 otherwise).
	Done  int `json:"done,omitempty"`
	Total int `json:"total,omitempty"`
}

// SetProgress sets the function told of each step of long operations
// (nil: none). It is called from the goroutine running the operation.
func (p *Provider) SetProgress(f func(Progress)) { p.progressFn = f }

func (p *Provider) progress(pr Progress) {
	if p.progressFn != nil {
		p.progressFn(pr)
	}
}

// SetGitProgress sets where git's own progress meter goes while allocate
// checks a workspace's files out (nil: nowhere, git runs quietly). Only
// the meter's lines are written there; it is for a person at a terminal.
func (p *Provider) SetGitProgress(w io.Writer) { p.gitProgress = w }

// withGitProgress is ctx asking gitops for git's progress meter, when one
// was set.
func (p *Provider) withGitProgress(ctx context.Context) context.Context {
	if p.gitProgress == nil {
		return ctx
	}
	return gitops.WithProgress(ctx, p.gitProgress)
}
