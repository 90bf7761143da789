package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestFitLines(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"short\n", "short\n"},
		{"salvage  one two three four\n", "salvage  one two three four\n"},
		{"label    " + strings.Repeat("word ", 30) + "end\n",
			"label    word word word word word word word word word word word word word word word word word word\n" +
				"         word word word word word word word word word word word word end\n"},
		{strings.Repeat("x", 120) + " tail\n", strings.Repeat("x", 120) + "\n    tail\n"},
		{"no newline " + strings.Repeat("y ", 60), ""},
	}
	for _, tc := range tests {
		got := fitLines(tc.in, 40*2+20)
		if tc.want != "" {
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fitLines(%q) (-want +got):\n%s", tc.in, diff)
			}
		}
		for _, line := range strings.Split(got, "\n") {
			if n := utf8.RuneCountInString(line); n > 100 && strings.Contains(line, " ") {
				t.Errorf("line of %d columns with a space to break at: %q", n, line)
			}
		}
		if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(tc.in), " ") {
			t.Errorf("fitLines(%q) changed the words: %q", tc.in, got)
		}
	}
}
