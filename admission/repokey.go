package admission

import (
	"fmt"
	"net/url"
	"strings"
)

// CheckCoordinationSetting returns why value cannot be the setting of the
// coordination key, or "". An empty value unsets the key.
func CheckCoordinationSetting(key, value string) string {
	if value == "" {
		return ""
	}
	switch key {
	case PolicyRepositoryKey:
		if !validHostName(value) {
			return fmt.Sprintf("a repository key is 1 to %d printable ASCII characters without spaces", maxName)
		}
	case PolicyEtcdEndpoints:
		for _, e := range strings.Split(value, ",") {
			u, err := url.Parse(e)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
				return fmt.Sprintf("endpoint %q is not an http:// or https:// URL of a host and port", e)
			}
		}
	case PolicyEtcdCA, PolicyEtcdCert, PolicyEtcdKey:
		if !strings.HasPrefix(value, "/") {
			return "a certificate or key file is named by its absolute path"
		}
	case PolicyEtcdClusterID:
		for _, c := range value {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return "a cluster id is lower-case hexadecimal, as the refusal that asks for it prints it"
			}
		}
	}
	return ""
}

// defaultPorts are the ports a repository URL may name or leave out.
var defaultPorts = map[string]string{"ssh": "22", "git+ssh": "22", "ssh+git": "22", "https": "443", "http": "80", "git": "9418"}

// RepositoryKeyFromURL derives a repository key from a remote's URL, so
// that every clone of one repository finds the same key whichever way it
// was cloned: the host in lower case and the path, without the scheme,
// the user, a default port, a trailing slash or the ".git" suffix;
// scp-like "user@host:path" is read as ssh://user@host/path. So
// https://GitHub.com/acme/app.git, git@github.com:acme/app and
// ssh://git@github.com:22/acme/app/ all give github.com/acme/app. A local
// path names no repository other hosts share: refused.
func RepositoryKeyFromURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", fmt.Errorf("the URL is empty")
	}
	if !strings.Contains(s, "://") {
		// scp-like syntax: [user@]host:path, where no slash precedes the colon.
		colon := strings.Index(s, ":")
		if colon <= 0 || strings.Contains(s[:colon], "/") {
			return "", fmt.Errorf("%s is a local path, which names no repository other hosts can share", raw)
		}
		s = "ssh://" + s[:colon] + "/" + strings.TrimPrefix(s[colon+1:], "/")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%s is not a URL git understands: %v", raw, err)
	}
	if u.Scheme == "file" || u.Host == "" {
		return "", fmt.Errorf("%s is a local path, which names no repository other hosts can share", raw)
	}
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && p != defaultPorts[strings.ToLower(u.Scheme)] {
		host += ":" + p
	}
	path := strings.Trim(u.Path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimSuffix(path, "/")
	if path == "" {
		return "", fmt.Errorf("%s names a host but no repository", raw)
	}
	return host + "/" + path, nil
}
