package gitops

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// ErrSplitIndex means the index is split (core.splitIndex): its entries
// live partly in a shared index file, so scanning this file alone is not
// enough. Callers then ask git.
var ErrSplitIndex = wire.Sentinel("git_failed", "gitops: split index")

// IndexGitlinks returns the paths of the gitlink (submodule) entries in an
// index file's bytes, formats 2 to 4, for object ids of hashLen bytes.
//
// salvage.Snapshot needs only these paths, to ask git which submodules are
// dirty. Reading them in process costs about a millisecond on a
// 20,000-entry index, against tens of milliseconds for git to stat every
// file (see salvage's BenchmarkSnapshot). The file is not trusted:
// anything that does not parse is an error, and the caller then asks git
// about every path.
// The trailing checksum is not verified: git verified it when it wrote the
// file a moment ago, and a wrong answer here only makes the dirty-submodule
// check ask git about more or fewer paths.
func IndexGitlinks(data []byte, hashLen int) ([]string, error) {
	var links []string
	err := ScanIndex(data, hashLen, func(e IndexEntry) {
		if e.Mode == ModeGitlink {
			links = append(links, e.Path)
		}
	})
	if err != nil {
		return nil, err
	}
	return links, nil
}

// An IndexEntry is what ScanIndex reports of one index entry.
type IndexEntry struct {
	Path  string
	Mode  Mode
	ID    string // hex
	Stage int    // 0, or 1 to 3 for a conflict
	// AssumeUnchanged is the "assume valid" bit (git update-index
	// --assume-unchanged); SkipWorktree and IntentToAdd are extended
	// flags (index format 3 and later).
	AssumeUnchanged, SkipWorktree, IntentToAdd bool
}

// Index entry flag bits (see gitformat-index(5)).
const (
	indexFlagAssumeValid  = 0x8000
	indexFlagExtended     = 0x4000
	indexFlagStageMask    = 0x3000
	indexExtSkipWorktree  = 0x4000
	indexExtIntentToAdd   = 0x2000
	indexEntryStatLength  = 40 // ctime, mtime, dev, ino, mode, uid, gid, size
	indexHeaderLength     = 12
	indexMaxFlagsNameSize = 0xfff
)

// ScanIndex calls fn with every entry of an index file's bytes, formats 2
// to 4, for object ids of hashLen bytes, and checks the extensions' framing.
// A split index (its entries partly in a shared index) gives ErrSplitIndex.
func ScanIndex(data []byte, hashLen int, fn func(IndexEntry)) error {
	return ScanIndexAt(data, hashLen, fn, nil)
}

// ScanIndexAt is ScanIndex, and sets *endOfEntries (when not nil) to where
// the entries end and the extensions begin.
func ScanIndexAt(data []byte, hashLen int, fn func(IndexEntry), endOfEntries *int) error {
	if hashLen != 20 && hashLen != 32 {
		return fmt.Errorf("index: hash length %d", hashLen)
	}
	if len(data) < indexHeaderLength+hashLen || string(data[:4]) != "DIRC" {
		return errors.New("index: no DIRC header")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return fmt.Errorf("index: unsupported version %d", version)
	}
	count := binary.BigEndian.Uint32(data[8:12])
	end := len(data) - hashLen // the trailing checksum
	off := indexHeaderLength
	var prev []byte
	emptyName := false
	for i := uint32(0); i < count; i++ {
		start := off
		if end-off < indexEntryStatLength+hashLen+2 {
			return fmt.Errorf("index: entry %d truncated", i)
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		id := hex.EncodeToString(data[off+indexEntryStatLength : off+indexEntryStatLength+hashLen])
		off += indexEntryStatLength + hashLen
		flags := binary.BigEndian.Uint16(data[off:])
		off += 2
		var ext uint16
		if flags&indexFlagExtended != 0 {
			if version < 3 {
				return fmt.Errorf("index: entry %d has extended flags in version %d", i, version)
			}
			if end-off < 2 {
				return fmt.Errorf("index: entry %d truncated", i)
			}
			ext = binary.BigEndian.Uint16(data[off:])
			off += 2
		}
		var name []byte
		if version == 4 {
			strip, n := indexVarint(data[off:end])
			if n <= 0 || strip > uint64(len(prev)) {
				return fmt.Errorf("index: entry %d has a bad path prefix", i)
			}
			off += n
			nul := bytes.IndexByte(data[off:end], 0)
			if nul < 0 {
				return fmt.Errorf("index: entry %d path not terminated", i)
			}
			name = make([]byte, 0, len(prev)-int(strip)+nul)
			name = append(append(name, prev[:len(prev)-int(strip)]...), data[off:off+nul]...)
			off += nul + 1
		} else {
			nul := bytes.IndexByte(data[off:end], 0)
			if nul < 0 {
				return fmt.Errorf("index: entry %d path not terminated", i)
			}
			name = data[off : off+nul]
			// 1 to 8 NULs pad the entry to a multiple of 8 bytes.
			off = start + (off+nul-start+8)&^7
			if off > end {
				return fmt.Errorf("index: entry %d truncated", i)
			}
		}
		if len(name) == 0 {
			// Legal only in a split index, where the name is taken from
			// the shared index; the "link" extension must follow.
			emptyName = true
		}
		if n := int(flags & indexMaxFlagsNameSize); n < indexMaxFlagsNameSize && n != len(name) {
			return fmt.Errorf("index: entry %d path length %d, flags say %d", i, len(name), n)
		}
		fn(IndexEntry{Path: string(name), Mode: Mode(mode), ID: id, Stage: int(flags&indexFlagStageMask) >> 12,
			AssumeUnchanged: flags&indexFlagAssumeValid != 0, SkipWorktree: ext&indexExtSkipWorktree != 0,
			IntentToAdd: ext&indexExtIntentToAdd != 0})
		prev = name
	}
	if endOfEntries != nil {
		*endOfEntries = off
	}
	// Extensions: a 4-byte signature and a 4-byte length each.
	for off < end {
		if end-off < 8 {
			return errors.New("index: truncated extension")
		}
		sig := string(data[off : off+4])
		size := binary.BigEndian.Uint32(data[off+4 : off+8])
		if uint64(size) > uint64(end-off-8) {
			return fmt.Errorf("index: extension %q overruns the file", sig)
		}
		if sig == "link" {
			return ErrSplitIndex
		}
		off += 8 + int(size)
	}
	if emptyName {
		return errors.New("index: entry with an empty path")
	}
	return nil
}

// IndexResolveUndo returns the stages that the index's resolve-undo
// ("REUC") extension keeps for conflicts resolved since (`git checkout -m`
// recreates a conflict from them), as entries with Stage 1 to 3. The
// extensions begin at entriesEnd (see ScanIndexAt). Each record is a
// NUL-terminated path, three NUL-terminated octal modes (0: no such
// stage), then an object id for every stage whose mode is not 0.
func IndexResolveUndo(data []byte, hashLen, entriesEnd int) ([]IndexEntry, error) {
	var out []IndexEntry
	end := len(data) - hashLen
	for off := entriesEnd; off+8 <= end; {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		off += 8
		if size > end-off {
			return nil, fmt.Errorf("index: extension %q overruns the file", sig)
		}
		if sig != "REUC" {
			off += size
			continue
		}
		b := data[off : off+size]
		off += size
		for len(b) > 0 {
			nul := bytes.IndexByte(b, 0)
			if nul < 0 {
				return nil, errors.New("index: resolve-undo path not terminated")
			}
			path := string(b[:nul])
			b = b[nul+1:]
			var modes [3]uint64
			for i := range modes {
				nul := bytes.IndexByte(b, 0)
				if nul < 0 {
					return nil, errors.New("index: resolve-undo mode not terminated")
				}
				m, err := strconv.ParseUint(string(b[:nul]), 8, 32)
				if err != nil {
					return nil, fmt.Errorf("index: resolve-undo mode %q", b[:nul])
				}
				modes[i] = m
				b = b[nul+1:]
			}
			for i, m := range modes {
				if m == 0 {
					continue
				}
				if len(b) < hashLen {
					return nil, errors.New("index: resolve-undo entry truncated")
				}
				out = append(out, IndexEntry{Path: path, Mode: Mode(m), ID: hex.EncodeToString(b[:hashLen]), Stage: i + 1})
				b = b[hashLen:]
			}
		}
	}
	return out, nil
}

// indexVarint decodes git's offset varint (varint.c), returning the value
// and the bytes used, or n <= 0 on malformed input.
func indexVarint(b []byte) (val uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	n = 1
	val = uint64(c & 127)
	for c&128 != 0 {
		val++
		if val == 0 || val>>57 != 0 {
			return 0, -1
		}
		if n >= len(b) {
			return 0, -1
		}
		c = b[n]
		n++
		val = val<<7 + uint64(c&127)
	}
	return val, n
}

// CacheTreeRoot returns the root tree id recorded in an index file's
// cache-tree ("TREE") extension when it is valid, else "". A valid root is
// what `git write-tree` of the index would answer, without running it. The
// file is not trusted: anything unexpected gives "".
//
// entriesEnd is where the entries end, as ScanIndexAt found it.
func CacheTreeRoot(data []byte, hashLen, entriesEnd int) string {
	if len(data) < indexHeaderLength+hashLen || string(data[:4]) != "DIRC" || entriesEnd < indexHeaderLength {
		return ""
	}
	end := len(data) - hashLen
	off := entriesEnd
	for end-off >= 8 {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		if size < 0 || size > end-off-8 {
			return ""
		}
		if sig != "TREE" {
			off += 8 + size
			continue
		}
		ext := data[off+8 : off+8+size]
		// The root: an empty path, NUL, "<entries> <subtrees>\n", id.
		nul := bytes.IndexByte(ext, 0)
		if nul != 0 {
			return ""
		}
		nl := bytes.IndexByte(ext, '\n')
		if nl < 0 {
			return ""
		}
		counts := strings.Fields(string(ext[1:nl]))
		if len(counts) != 2 || strings.HasPrefix(counts[0], "-") {
			return ""
		}
		if _, err := strconv.Atoi(counts[0]); err != nil || len(ext) < nl+1+hashLen {
			return ""
		}
		return hex.EncodeToString(ext[nl+1 : nl+1+hashLen])
	}
	return ""
}
