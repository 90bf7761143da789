package durable

import "testing"

func TestUnescapeMount(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/tab\011x`: "/tab\tx", `/end\04`: `/end\04`, `\134`: `\`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMountsUnder(t *testing.T) {
	t.Parallel()
	got, err := MountsUnder("/")
	if err != nil {
		t.Skip("no mountinfo:", err)
	}
	for _, mp := range got {
		if mp == "/" {
			t.Errorf("the folder itself is listed")
		}
	}
	if none, err := MountsUnder(t.TempDir()); err != nil || len(none) != 0 {
		t.Errorf("a new folder has mounts under it: %v, %v", none, err)
	}
}
