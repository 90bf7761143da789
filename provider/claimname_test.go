package provider

import "testing"

// TestIsClaimNameAgreesWithClaimName: the index's check of record names
// accepts exactly the names claimName makes.
func TestIsClaimNameAgreesWithClaimName(t *testing.T) {
	t.Parallel()
	names := []string{"000001.claim", "000001.created", "000012.claim", "1.claim", "0000001.claim", "000001claim",
		"000001.clai", "000001.claim.", "00000a.claim", "999999.claim", "1000000.claim", "-00001.claim", "", "000001."}
	for _, seq := range []int{-1, 0, 1, 12, 999999, 1000000} {
		for _, suffix := range []string{"claim", "created", ""} {
			for _, name := range append(names, claimName(seq, suffix)) {
				if got, want := isClaimName(name, seq, suffix), name == claimName(seq, suffix); got != want {
					t.Errorf("isClaimName(%q, %d, %q) = %v, want %v", name, seq, suffix, got, want)
				}
			}
		}
	}
}
