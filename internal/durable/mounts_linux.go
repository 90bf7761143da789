package durable

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MountsUnder lists the mount points strictly inside dir (a physical
// path: symbolic links resolved), as this process's mount namespace has
// them (/proc/self/mountinfo): what cleaning dir must never reach into,
// since a mount there is another file system (a bind mount of someone's
// folder, say).
func MountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if mp := unescapeMount(fields[4]); strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	return out, sc.Err()
}

// unescapeMount decodes the octal escapes (\040 for a space, ...) the
// kernel writes in mountinfo's paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
