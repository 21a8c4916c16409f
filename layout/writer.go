package layout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writer writes an .xdna file blob by blob to a temporary file beside the
// destination (see createTemp), and renames it into place on Commit.
// Nothing is left behind unless Commit succeeds.
//
// Blobs go to the file in one of two ways. AddBlob places and writes a
// blob. Reserve places a blob of a given size, as AddBlob would, and
// WriteBlobAt writes it later: several goroutines may write their reserved
// blobs at once and in any order (a pipeline whose stages know every
// blob's size up front), while Reserve, AddBlob and Commit are for one
// goroutine.
//
// A blob goes to the file's page cache through a pipe (vmsplice, then
// splice; see spliceAt): the kernel copies it from the blob's own pages,
// not through the user-space address it was given. On the development VM
// (a PVM guest) that copy runs at 1.2-5 GB/s, where write(2)'s copy from
// user memory ran at 0.4 GB/s. Where the file system refuses splice,
// blobs are written with pwrite. The bytes of the file are the same
// either way (the gap after a blob up to the next BlobAlign boundary reads
// as zeros: a hole, or the zeros written with it).
//
// While blobs are written, a goroutine of the Writer starts the
// write-back of the file's dirty pages each time syncEvery more bytes have
// gone to it (sync_file_range, SYNC_FILE_RANGE_WRITE: it starts the
// writes, it waits for nothing), and syncs the file each time flushEvery
// more have (fdatasync), so that the disk works while the blobs are being
// made and the sync in Commit finds little left to do. The development
// VM's virtual disk caches writes, and a sync there costs 0.7-0.9 ms a MiB
// written since the last (1 GB: 0.7-0.8 s), during which the writes sent
// after it wait: a 1 GB pack keeps that disk busy from its first blob to
// its end, and the syncs, spread over the pack, are what bounds it. Syncs
// every 64 MiB gave packs of 0.96 s (median of 12, interleaved; 0.83-1.12)
// against 0.985 every 32 MiB and 1.00 every 128 MiB; the O_DIRECT writes
// used before, with the same background syncs, took 0.9-1.8 s for the
// same bytes with no other work, and 1.20-1.25 s for a pack that took
// 1.06-1.10 s through the page cache.
type Writer struct {
	path     string
	tmp      *os.File
	off      int64 // where the next blob goes
	err      error
	noSplice atomic.Bool // set when the file system refused a splice

	spliceMu sync.Mutex // one splice at a time (they would take the inode lock in turn anyway)
	pipe     [2]int     // the pipe of spliceAt, read and write ends; pipe[0] < 0 when not open

	written  atomic.Int64  // bytes written so far
	syncNow  atomic.Bool   // SyncSoon was called: the syncer's next turn syncs
	syncReq  chan struct{} // asks the syncer for a write-back (capacity 1)
	syncDone chan struct{} // closed when the syncer has stopped
	syncErr  error         // the first background write-back error (read after syncDone)
	stopOnce sync.Once
}

// syncEvery is the number of bytes between background write-backs, and
// flushEvery between background syncs (variables so that the tests can
// make every write ask for one).
var syncEvery, flushEvery int64 = 32 << 20, 64 << 20

// firstSync is the number of bytes written before the first background
// write-back is asked for (syncEvery, if smaller): the disk starts on the
// first blobs while the pipeline fills up, 20-30 ms before it has written
// syncEvery bytes on the development VM.
const firstSync = 8 << 20

// noSplice turns splice off (a test hook: both paths must give the same bytes).
var noSplice = false

// pipeSize is the capacity asked for the pipe of spliceAt: the default
// limit for unprivileged processes (/proc/sys/fs/pipe-max-size), so that
// a blob takes a vmsplice and a splice per MiB rather than per 64 KiB.
const pipeSize = 1 << 20

// Create starts writing the .xdna file path.
func Create(path string) (*Writer, error) {
	tmp, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, tmp: tmp, off: BlobAlign, pipe: [2]int{-1, -1}, syncReq: make(chan struct{}, 1), syncDone: make(chan struct{})}
	w.noSplice.Store(noSplice)
	go w.syncer()
	return w, nil
}

// syncer starts the write-back of the file's dirty pages each time it is
// asked to, and syncs the file instead (fdatasync) when flushEvery bytes
// have been written since its last sync began, or when SyncSoon asked, and
// drops the pages that sync has cleaned from the page cache
// (dropCached, which Commit does for the rest: dropped there all at once,
// the pages of 1 GB took 30-48 ms at the end of a pack on the development
// VM, when nothing else was left to do), until stopSyncer. It keeps the
// first error for Commit: a write-back error is reported once per open
// file, so the final sync in Commit, on the same file, would not see an
// error that a background sync has already taken.
//
// It counts the bytes written, not the requests it took: requests that
// come while it syncs are one pending request, and counting requests had
// the syncs of a 1 GB pack on the development VM (each 100-130 ms, while
// the pipeline wrote another 130-170 MB) 230-390 MB apart rather than the
// 128 MiB asked for then, and left that much for Commit's sync.
func (w *Writer) syncer() {
	defer close(w.syncDone)
	var synced int64 // the bytes written when the last background sync began
	for range w.syncReq {
		fd := int(w.tmp.Fd())
		now := w.syncNow.Swap(false)
		if n := w.written.Load(); n-synced >= flushEvery || now && n > synced {
			synced = n
			if err := unix.Fdatasync(fd); err != nil && w.syncErr == nil {
				w.syncErr = &os.PathError{Op: "fdatasync", Path: w.tmp.Name(), Err: err}
			}
			dropCached(w.tmp)
			continue
		}
		if err := unix.SyncFileRange(fd, 0, 0, unix.SYNC_FILE_RANGE_WRITE); err != nil && w.syncErr == nil {
			w.syncErr = &os.PathError{Op: "sync_file_range", Path: w.tmp.Name(), Err: err}
		}
	}
}

// SyncSoon asks the background syncer to sync what has been written so far
// as soon as it is free, and returns at once: a caller that has written
// the bulk of the file and has work left that writes little (the
// tokenizer's blob, the manifest) lets the disk take the bulk meanwhile,
// so that the sync in Commit finds little left. Like AddBlob, it is for the
// goroutine that calls Commit, before Commit or Abort.
func (w *Writer) SyncSoon() {
	if w.tmp == nil {
		return
	}
	w.syncNow.Store(true)
	select {
	case w.syncReq <- struct{}{}:
	default: // a request is pending: the syncer sees syncNow when it takes it
	}
}

// stopSyncer stops the syncer and waits for it; it returns the first
// background write-back error.
func (w *Writer) stopSyncer() error {
	w.stopOnce.Do(func() { close(w.syncReq) })
	<-w.syncDone
	return w.syncErr
}

// wrote counts n bytes written and asks the syncer for a write-back each
// time the bytes written pass firstSync (or syncEvery, if smaller) and
// then each further syncEvery.
func (w *Writer) wrote(n int64) {
	shift := syncEvery - min(firstSync, syncEvery)
	end := w.written.Add(n) + shift
	if (end-n)/syncEvery == end/syncEvery {
		return
	}
	select {
	case w.syncReq <- struct{}{}:
	default: // a write-back is pending: it will cover these bytes too
	}
}

// Preallocate allocates the file's blocks up to the end of the blobs
// reserved so far (fallocate), before they are written: a disk too small
// for the file fails here, before any work, and the write-back need not
// allocate blocks as it goes. A file system that cannot preallocate is not
// an error (the blobs are written as they are without it); the file's
// bytes are the same either way.
func (w *Writer) Preallocate() error {
	if w.err != nil {
		return w.err
	}
	err := unix.Fallocate(int(w.tmp.Fd()), 0, 0, w.off)
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG) {
		return tempErr(w.path, &os.PathError{Op: "fallocate", Path: w.tmp.Name(), Err: err})
	}
	return nil
}

// BlobBuf returns a buffer of length n for a blob: its address is
// BlobAlign-aligned and its capacity is n rounded up to BlobAlign, so that
// the Writer writes whole pages (it zeroes the bytes past n and writes
// them with the blob).
func BlobBuf(n int) []byte {
	c := int(alignUp(int64(n), BlobAlign))
	b := make([]byte, c+BlobAlign)
	o := int(alignUp(int64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), BlobAlign) - int64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
	return b[o : o+n : o+c]
}

// AddBlob appends b at the next BlobAlign boundary and returns where it went.
func (w *Writer) AddBlob(b []byte) (BlobRef, error) {
	if w.err != nil {
		return BlobRef{}, w.err
	}
	off, err := w.Reserve(int64(len(b)))
	if err != nil {
		return BlobRef{}, err
	}
	if err := w.WriteBlobAt(b, off); err != nil {
		w.err = err
		return BlobRef{}, err
	}
	return BlobRef{Offset: off, Size: int64(len(b)), CRC32C: Checksum(b)}, nil
}

// Reserve places a blob of n bytes at the next BlobAlign boundary and
// returns its offset, for WriteBlobAt.
func (w *Writer) Reserve(n int64) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	if n < 0 || n > 1<<46 {
		return 0, fmt.Errorf("%s: blob of %d bytes", w.path, n)
	}
	off := w.off
	w.off = alignUp(off+n, BlobAlign)
	return off, nil
}

// WriteBlobAt writes b at off, where Reserve placed a blob of len(b)
// bytes, with the padding to BlobAlign when b's capacity holds it (a
// BlobBuf buffer): through a pipe into the page cache (spliceAt), or with
// pwrite where the file system refuses splice. It is safe to call from
// several goroutines at once, for distinct reservations.
func (w *Writer) WriteBlobAt(b []byte, off int64) error {
	if n := int(alignUp(int64(len(b)), BlobAlign)); cap(b) >= n {
		clear(b[len(b):n])
		b = b[:n]
	}
	if len(b) == 0 {
		return nil
	}
	if !w.noSplice.Load() {
		err := w.spliceAt(b, off)
		if err == nil {
			w.wrote(int64(len(b)))
			return nil
		}
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP) {
			return tempErr(w.path, err)
		}
		w.noSplice.Store(true) // and write b again, whole, with pwrite
	}
	if _, err := w.tmp.WriteAt(b, off); err != nil {
		return tempErr(w.path, err)
	}
	w.wrote(int64(len(b)))
	return nil
}

// spliceAt writes b at off: vmsplice hands the pipe b's pages (no copy),
// splice copies them into the file's page cache, up to the pipe's
// capacity at a time. It returns with the pipe empty, so b may be reused
// at once; after an error it closes the pipe (which may still hold b's
// pages) and the next call opens another.
func (w *Writer) spliceAt(b []byte, off int64) (err error) {
	w.spliceMu.Lock()
	defer w.spliceMu.Unlock()
	if w.pipe[0] < 0 {
		if err := unix.Pipe2(w.pipe[:], unix.O_CLOEXEC); err != nil {
			w.pipe = [2]int{-1, -1}
			return &os.SyscallError{Syscall: "pipe2", Err: err}
		}
		unix.FcntlInt(uintptr(w.pipe[1]), unix.F_SETPIPE_SZ, pipeSize) // advice: the default capacity works too
	}
	defer func() {
		if err != nil {
			w.closePipe()
		}
	}()
	fd := int(w.tmp.Fd())
	for len(b) > 0 {
		iov := []unix.Iovec{{Base: &b[0]}}
		iov[0].SetLen(len(b))
		n, err := unix.Vmsplice(w.pipe[1], iov, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.SyscallError{Syscall: "vmsplice", Err: err}
		}
		for m := n; m > 0; {
			k, err := unix.Splice(w.pipe[0], nil, fd, &off, m, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return &os.PathError{Op: "splice", Path: w.tmp.Name(), Err: err}
			}
			if k <= 0 {
				return &os.PathError{Op: "splice", Path: w.tmp.Name(), Err: io.ErrShortWrite}
			}
			m -= int(k)
		}
		b = b[n:]
	}
	return nil
}

// closePipe closes the pipe of spliceAt, if open.
func (w *Writer) closePipe() {
	if w.pipe[0] >= 0 {
		unix.Close(w.pipe[0])
		unix.Close(w.pipe[1])
		w.pipe = [2]int{-1, -1}
	}
}

// Commit writes the manifest and the header, syncs, and renames the file
// into place.
func (w *Writer) Commit(m *Manifest) error {
	if w.err != nil {
		w.Abort()
		return w.err
	}
	body, err := m.Marshal()
	if err == nil {
		err = m.Validate()
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("manifest: %w", err)
	}
	moff := w.off
	var h [HeaderSize]byte
	copy(h[:8], Magic)
	binary.LittleEndian.PutUint32(h[8:], containerVers)
	binary.LittleEndian.PutUint32(h[12:], HeaderSize)
	binary.LittleEndian.PutUint64(h[16:], uint64(moff))
	binary.LittleEndian.PutUint64(h[24:], uint64(len(body)))
	binary.LittleEndian.PutUint32(h[32:], Checksum(body))
	binary.LittleEndian.PutUint64(h[40:], uint64(moff)+uint64(len(body)))
	binary.LittleEndian.PutUint32(h[60:], Checksum(h[:60]))
	steps := []func() error{
		w.stopSyncer,
		func() error { w.spliceMu.Lock(); w.closePipe(); w.spliceMu.Unlock(); return nil },
		func() error { _, err := w.tmp.WriteAt(body, moff); return err },
		func() error { _, err := w.tmp.WriteAt(h[:], 0); return err },
		func() error { return w.tmp.Truncate(moff + int64(len(body))) },
		w.tmp.Sync,
		func() error { dropCached(w.tmp); return nil },
		w.tmp.Close,
		func() error { return os.Rename(w.tmp.Name(), w.path) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			w.Abort()
			return tempErr(w.path, err)
		}
	}
	w.tmp = nil
	return nil
}

// Abort removes the temporary file. It is safe to call after Commit.
func (w *Writer) Abort() {
	w.stopSyncer()
	w.spliceMu.Lock()
	w.closePipe()
	w.spliceMu.Unlock()
	if w.tmp != nil {
		w.tmp.Close()
		os.Remove(w.tmp.Name())
		w.tmp = nil
	}
}
