package gitops

import (
	"context"
	"strings"
)

// RemoteURL returns the URL git has configured for the remote name in the
// repository whose common directory is commonDir (as `git remote get-url`
// would, without its insteadOf rewriting), and whether one is set.
func RemoteURL(ctx context.Context, commonDir, name string) (string, bool, error) {
	res, err := git(ctx, commonDir, cmdOpts{readOnly: true, okCodes: []int{1}}, "config", "--get", "remote."+name+".url")
	if err != nil {
		return "", false, err
	}
	if res.code == 1 {
		return "", false, nil
	}
	url := strings.TrimSpace(string(res.stdout))
	return url, url != "", nil
}
