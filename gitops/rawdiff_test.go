package gitops

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRawDiff(t *testing.T) {
	t.Parallel()
	const a = "78ab8055022746ff01257016035ce28d7608104d"
	const z = "0000000000000000000000000000000000000000"
	tests := []struct {
		name string
		in   string
		want []RawChange
		ok   bool
	}{
		{"empty", "", nil, true},
		{"added and modified", ":000000 100644 " + z + " " + a + " A\x00new file\x00:100644 100755 " + a + " " + a + " M\x00x\ny\x00",
			[]RawChange{
				{SrcMode: ModeAbsent, DstMode: ModeFile, SrcID: z, DstID: a, Status: 'A', Path: "new file"},
				{SrcMode: ModeFile, DstMode: ModeExecutable, SrcID: a, DstID: a, Status: 'M', Path: "x\ny"},
			}, true},
		{"renamed", ":100644 100644 " + a + " " + a + " R100\x00old\x00new\x00",
			[]RawChange{{SrcMode: ModeFile, DstMode: ModeFile, SrcID: a, DstID: a, Status: 'R', Score: "100", SrcPath: "old", Path: "new"}}, true},
		{"dirty submodule", ":160000 160000 " + a + " " + z + " M\x00sub\x00",
			[]RawChange{{SrcMode: ModeGitlink, DstMode: ModeGitlink, SrcID: a, DstID: z, Status: 'M', Path: "sub"}}, true},
		{"no colon", "100644 100644 " + a + " " + a + " M\x00x\x00", nil, false},
		{"no path", ":100644 100644 " + a + " " + a + " M\x00", nil, false},
		{"rename without second path", ":100644 100644 " + a + " " + a + " R100\x00old\x00", nil, false},
		{"score on M", ":100644 100644 " + a + " " + a + " M50\x00x\x00", nil, false},
		{"unknown status", ":100644 100644 " + a + " " + a + " Q\x00x\x00", nil, false},
		{"short id", ":100644 100644 78ab " + a + " M\x00x\x00", nil, false},
		{"extra field", ":100644 100644 " + a + " " + a + " M x\x00x\x00", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRawDiff([]byte(tt.in))
			if (err == nil) != tt.ok {
				t.Fatalf("parseRawDiff(%q) error = %v, want ok %v", tt.in, err, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseRawDiff(f *testing.F) {
	const a = "78ab8055022746ff01257016035ce28d7608104d"
	f.Add([]byte(":000000 100644 " + a + " " + a + " A\x00new file\x00:100644 100644 " + a + " " + a + " R87\x00old\x00new\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		changes, err := ParseRawDiff(in)
		if err != nil {
			return
		}
		var out []byte
		for _, c := range changes {
			out = appendRawChange(out, c)
		}
		if string(out) != string(in) {
			t.Fatalf("round trip:\nin  %q\nout %q", in, out)
		}
	})
}
