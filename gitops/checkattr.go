package gitops

import (
	"context"
	"strings"
)

// ConversionAttributes are the attributes under which git may store a
// file's bytes other than they are on disk, or check them out otherwise
// (crlf is text's older name).
var ConversionAttributes = []string{"text", "eol", "crlf", "filter", "ident", "working-tree-encoding"}

// CheckAttrs asks `git check-attr`, run in dir with o (its Stdin is set
// here), for the attributes attrs of each of paths: path, then attribute,
// then its value (set, unset, unspecified or a value). A path git does not
// answer for has none.
func CheckAttrs(ctx context.Context, dir string, o Cmd, paths, attrs []string) (map[string]map[string]string, error) {
	var in strings.Builder
	for _, p := range paths {
		in.WriteString(p + "\x00")
	}
	o.Stdin = []byte(in.String())
	res, err := Run(ctx, dir, o, append([]string{"check-attr", "-z", "--stdin"}, attrs...)...)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	if len(res.Stdout) == 0 {
		return out, nil
	}
	f := strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00")
	if len(f)%3 != 0 {
		return nil, Unexpected("git check-attr", "%d fields", len(f))
	}
	for i := 0; i+2 < len(f); i += 3 {
		if out[f[i]] == nil {
			out[f[i]] = map[string]string{}
		}
		out[f[i]][f[i+1]] = f[i+2]
	}
	return out, nil
}
