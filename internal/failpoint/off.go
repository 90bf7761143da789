//go:build !failpoints

package failpoint

// Enabled reports whether this binary was built with the failpoints tag.
const Enabled = false

func inject(string) error { return nil }

// Without the failpoints tag the variable is never read: nothing to check.
func check() (string, error) { return "", nil }
