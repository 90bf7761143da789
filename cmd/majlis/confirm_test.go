package main

import "testing"

// The interactive confirmation of reclaim takes y or yes, in any case,
// and nothing else.
func TestConfirmedAnswers(t *testing.T) {
	t.Parallel()
	for answer, want := range map[string]bool{
		"y\n": true, "yes\n": true, "Y\n": true, "YES\n": true, "  yes \n": true, "y": true,
		"": false, "\n": false, "n\n": false, "no\n": false, "yess\n": false, "ye\n": false, "yes please\n": false,
	} {
		if got := confirmed(answer); got != want {
			t.Errorf("confirmed(%q) = %v, want %v", answer, got, want)
		}
	}
}
