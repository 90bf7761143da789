package admission

import "testing"

func TestRepositoryKeyFromURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://github.com/acme/app.git", "github.com/acme/app"},
		{"https://GitHub.com/acme/app", "github.com/acme/app"},
		{"https://user:secret@github.com/acme/app.git/", "github.com/acme/app"},
		{"git@GitHub.com:acme/app", "github.com/acme/app"},
		{"git@github.com:acme/app.git", "github.com/acme/app"},
		{"github.com:acme/app", "github.com/acme/app"},
		{"ssh://git@github.com:22/acme/app/", "github.com/acme/app"},
		{"ssh://git@git.example.com:2222/acme/app.git", "git.example.com:2222/acme/app"},
		{"git://example.com:9418/App", "example.com/App"},
		{"http://example.com:8080/a/b.git", "example.com:8080/a/b"},
		{"https://example.com:443/a", "example.com/a"},
		{"/srv/git/app.git", ""},
		{"file:///srv/git/app.git", ""},
		{"./relative/app", ""},
		{"https://example.com/", ""},
		{"", ""},
	} {
		got, err := RepositoryKeyFromURL(tc.url)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("RepositoryKeyFromURL(%q) = %q, %v; want %q", tc.url, got, err, tc.want)
		}
	}
}

func TestCheckCoordinationSetting(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{PolicyEtcdEndpoints, "http://127.0.0.1:2379,https://etcd2:2379", true},
		{PolicyEtcdEndpoints, "etcd:2379", false},
		{PolicyEtcdEndpoints, "unix:///run/etcd.sock", false},
		{PolicyEtcdEndpoints, "", true},
		{PolicyEtcdCA, "/etc/ca.pem", true},
		{PolicyEtcdCA, "ca.pem", false},
		{PolicyRepositoryKey, "github.com/acme/app", true},
		{PolicyRepositoryKey, "has space", false},
		{PolicyEtcdClusterID, "cdf818194e3a8c32", true},
		{PolicyEtcdClusterID, "CDF8", false},
	} {
		if why := CheckCoordinationSetting(tc.key, tc.value); (why == "") != tc.ok {
			t.Errorf("%s=%q: %q, want ok %v", tc.key, tc.value, why, tc.ok)
		}
	}
}
