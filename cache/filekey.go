package cache

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/internal/atomicfile"
)

// FileKey returns the key (Key) of the file f, whose content r reads from
// its start. A run of a GGUF or .zst file needs the key to find what the
// cache made of it, and hashing the whole file each time cost 0.3-0.4 s a
// start for a 0.7 GB GGUF in the page cache and 0.8 s when it had to be
// read from the disk (the development VM), seconds for an 8B model. So the
// key of each file hashed is recorded beside the entries
// (<root>/keys/<device>-<inode>.json) with what fstat said of the file
// then, and a later call that finds the same file (device and inode) with
// the same size, modification and status-change times takes the key from
// the record and reads nothing. Writing to a file changes both times (and
// the status-change time cannot be set back), so a changed file is hashed
// again.
//
// A file changed within the clock's granularity of the fstat before the
// hash would keep its times (ext4 stamps them from a clock that ticks every
// few milliseconds), so a key is recorded only for a file whose times are
// racyWindow older than that fstat, and only when fstat says the same after
// the hash as before it (git's index guards its racy entries the same
// way). A record that cannot be read or written changes nothing but the
// time: the file is hashed.
func FileKey(f *os.File, r io.Reader) (string, error) {
	t0 := time.Now()
	st, err := fileStat(f)
	if err != nil {
		return Key(r)
	}
	memo, err := path("keys", fmt.Sprintf("%x-%d.json", st.dev, st.ino))
	if err == nil {
		if key, ok := readKey(memo, st); ok {
			return key, nil
		}
	}
	key, err := Key(r)
	if err != nil || memo == "" {
		return key, err
	}
	if after, err := fileStat(f); err == nil && after == st && st.settled(t0) {
		writeKey(memo, keyRecord{Stat: st, Key: key})
	}
	return key, nil
}

// racyWindow is how much older than the fstat before a hash a file's times
// must be for its key to be recorded (a variable for the tests).
var racyWindow = time.Second

// stat is what FileKey compares of a file: its identity, size and times
// (nanoseconds since the epoch).
type stat struct {
	dev, ino uint64
	Size     int64 `json:"size"`
	Mtime    int64 `json:"mtime_ns"`
	Ctime    int64 `json:"ctime_ns"`
}

func fileStat(f *os.File) (stat, error) {
	var s unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &s); err != nil {
		return stat{}, err
	}
	return stat{dev: s.Dev, ino: s.Ino, Size: s.Size, Mtime: s.Mtim.Nano(), Ctime: s.Ctim.Nano()}, nil
}

// settled reports whether both times of s are racyWindow older than t.
func (s stat) settled(t time.Time) bool {
	limit := t.Add(-racyWindow).UnixNano()
	return s.Mtime <= limit && s.Ctime <= limit
}

// keyRecord is a record of <root>/keys: the file's stat (its device and
// inode are the record's name) and its key.
type keyRecord struct {
	Stat stat   `json:"stat"`
	Key  string `json:"key"`
}

// readKey returns the key of the record at memo if it describes st.
func readKey(memo string, st stat) (string, bool) {
	b, err := os.ReadFile(memo)
	if err != nil {
		return "", false
	}
	var r keyRecord
	if json.Unmarshal(b, &r) != nil || checkKey(r.Key) != nil {
		return "", false
	}
	r.Stat.dev, r.Stat.ino = st.dev, st.ino
	if r.Stat != st {
		return "", false
	}
	return r.Key, true
}

// writeKey writes r to memo (a temporary file renamed into place); it
// gives up quietly on an error, leaving no temporary file.
func writeKey(memo string, r keyRecord) {
	if b, err := json.Marshal(r); err == nil {
		atomicfile.Write(memo, append(b, '\n'), 0o600)
	}
}
