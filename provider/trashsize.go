package provider

// The sizes of kept trash folders, remembered. Measuring a folder walks
// every file in it; the budget (trash.max_bytes) needs the size of every
// kept trash each time what is due is computed. So each size measured is
// remembered in one file of the state folder (trash-sizes.json) with the
// folder's identity and the time of its top level, and used again while
// those are unchanged and it is younger than trashSizeTTL. It is a cache,
// never authority: deleting it or finding it damaged costs only a walk,
// and a stale size only delays a purge for the budget; the free-space
// floor is always read afresh (statfs).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
)

const (
	trashSizesName = "trash-sizes.json"
	trashSizeTTL   = 10 * time.Minute
)

type trashSizeEntry struct {
	Ino        uint64    `json:"ino"`
	MtimeNS    int64     `json:"mtime_ns"`
	Size       int64     `json:"size"`
	MeasuredAt time.Time `json:"measured_at"`
}

// trashSizes is the cache of one listing: read once, written back once
// when anything was measured.
type trashSizes struct {
	mu      sync.Mutex
	entries map[string]trashSizeEntry
	changed bool
}

func (p *Provider) loadTrashSizes() *trashSizes {
	ts := &trashSizes{entries: map[string]trashSizeEntry{}}
	if data, err := readRegularFile(filepath.Join(p.stateDir, trashSizesName)); err == nil {
		_ = json.Unmarshal(data, &ts.entries)
	}
	return ts
}

func (p *Provider) saveTrashSizes(ts *trashSizes) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if !ts.changed {
		return
	}
	data, err := json.Marshal(ts.entries)
	if err == nil {
		_ = durable.Replace(p.stateDir, trashSizesName, data)
	}
}

// size returns the size of the kept trash folder of binding's claim seq
// at path, remembered or measured (measure false: remembered only, -1
// when unknown).
func (p *Provider) cachedTrashSize(ts *trashSizes, binding string, seq int, path string, measure bool) int64 {
	key := trashKey(binding, seq)
	fi, err := os.Lstat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return 0
		}
		return -1
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	var ino uint64
	if st != nil {
		ino = st.Ino
	}
	now := p.now()
	ts.mu.Lock()
	e, ok := ts.entries[key]
	ts.mu.Unlock()
	if ok && e.Ino == ino && e.MtimeNS == fi.ModTime().UnixNano() && now.Sub(e.MeasuredAt) < trashSizeTTL && now.Sub(e.MeasuredAt) >= 0 {
		return e.Size
	}
	if !measure {
		return -1
	}
	n, err := p.trashSize(path)
	if err != nil {
		return -1
	}
	ts.mu.Lock()
	ts.entries[key] = trashSizeEntry{Ino: ino, MtimeNS: fi.ModTime().UnixNano(), Size: n, MeasuredAt: now}
	ts.changed = true
	ts.mu.Unlock()
	return n
}

// PurgeMayBeDue tells, cheaply, whether a purge of the kept trash may
// have anything to do now: a kept trash whose time is up or whose purge
// was interrupted, the free space below the floor, the remembered sizes
// past the budget, or a kept trash not measured yet; or ready pooled
// worktrees the pool should give back for space. It reads the records,
// the size cache and one statfs per folder of trash; it measures nothing.
// A reclaim's caller uses it to decide whether to start a purge.
func (p *Provider) PurgeMayBeDue() bool {
	tp, err := p.TrashPolicy()
	if err != nil {
		return true // the purge reports it
	}
	all, err := p.records.All()
	if err != nil {
		return true
	}
	kept := p.keptTrash(all, tp, sizesRemembered)
	for _, k := range kept {
		if k.Due != "" || k.SizeBytes < 0 {
			return true
		}
	}
	return p.poolMayGiveBack(all, tp, kept)
}
