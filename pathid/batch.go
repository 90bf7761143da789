package pathid

import (
	"io/fs"
	"os"
)

// A Resolver resolves many paths as one batch, as Resolve does, but looks
// up each directory on their way only once: paths that share ancestors
// (the workspaces under one root, say) cost one lstat each instead of one
// per component. Its answers describe the file system at some moment
// during the batch, as a series of Resolve calls would; use a Resolver for
// one check and drop it, since it never looks again at what it has seen.
// A Resolver is not safe for concurrent use.
type Resolver struct {
	lstats map[string]lstatResult
	links  map[string]linkResult
}

type lstatResult struct {
	fi  fs.FileInfo
	err error
}

type linkResult struct {
	target string
	err    error
}

// NewResolver returns an empty Resolver.
func NewResolver() *Resolver {
	return &Resolver{lstats: map[string]lstatResult{}, links: map[string]linkResult{}}
}

// Resolve is Resolve(p), through the batch's lookups.
func (r *Resolver) Resolve(p string) (Resolved, error) {
	abs, err := absolute("resolve", "", p)
	if err != nil {
		return Resolved{}, err
	}
	w := newWalker("resolve", p)
	w.lstat, w.readlink = r.lstat, r.readlink
	return resolveFormsWith(w, abs)
}

// Physical is Physical(p), through the batch's lookups.
func (r *Resolver) Physical(p string) (string, error) {
	abs, err := absolute("resolve", "", p)
	if err != nil {
		return "", err
	}
	w := newWalker("resolve", p)
	w.lstat, w.readlink = r.lstat, r.readlink
	res, err := w.walk("/", segment{rest: abs})
	return res.path, err
}

// Confine is Confine(root, p), through the batch's lookups: the root is
// walked once for every path of the batch.
func (r *Resolver) Confine(root, p string) (string, error) {
	return confine(root, p, r.lstat, r.readlink)
}

func (r *Resolver) lstat(path string) (fs.FileInfo, error) {
	if c, ok := r.lstats[path]; ok {
		return c.fi, c.err
	}
	fi, err := os.Lstat(path)
	r.lstats[path] = lstatResult{fi, err}
	return fi, err
}

func (r *Resolver) readlink(path string) (string, error) {
	if c, ok := r.links[path]; ok {
		return c.target, c.err
	}
	t, err := os.Readlink(path)
	r.links[path] = linkResult{t, err}
	return t, err
}
