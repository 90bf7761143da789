package gitops

import (
	"context"
	"strings"
)

// RemoteURL returns the URL git has configured for the remote name in the
// repository whose common directory is commonDir (as `git remote get-url`
// would, without its insteadOf rewriting), and whether one is set.
func RemoteURL(ctx context.Context, commonDir, name string) (string, bool, error) {
	res, err := Run(ctx, commonDir, Cmd{ReadOnly: true, OKCodes: []int{1}}, "config", "--get", "remote."+name+".url")
	if err != nil {
		return "", false, err
	}
	if res.Code == 1 {
		return "", false, nil
	}
	url := strings.TrimSpace(string(res.Stdout))
	return url, url != "", nil
}
