package pack

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
)

// The tensor stage of Run as a pipeline, so that reading, hashing,
// repacking and writing overlap across cores:
//
//	reader (1): each entry's bytes, in plan order, read into a buffer of the sources' arena, to the hasher and the dispatcher
//	hasher (1): hashes each entry, in plan order (the digest's order)
//	dispatcher (1): hands each entry to the packers, in plan order, with a buffer for its packed blob (the blobs' arena)
//	packers (cores-1 packing, 2 more writing): planar.Pack, crc32c, WriteBlobAt; any order
//	the caller: manifest entries and progress, in plan order
//
// The digest (Source.ContentDigest) is one BLAKE3 over every tensor in
// plan order, so it cannot be split across goroutines: the hasher
// (internal/blake3; on the development VM 0.15-0.19 s a GB alone on a core
// with AVX-512, 0.28-0.31 s in the pipeline, where zeebo/blake3 took 0.3
// and 0.43-0.58 s, and SHA-256 with SHA-NI, the digest before that,
// 0.57-0.62 s) does nothing but hash, and every other stage runs beside it:
//   - The reader reads each entry (source) into a buffer of an arena of its
//     own, a ring of memory that is reused, so that neither the hasher nor
//     the packers touch a page for the first time after the ring's first
//     lap. It runs ahead of the hasher and the packers by up to the ring's
//     size, and waits for nothing else.
//   - The packers' blobs are in a second arena (at most inFlight): the
//     reader and the hasher run ahead of packing and writing and are not
//     held up by a slow write.
//   - Every blob's offset is fixed before the pipeline starts
//     (Writer.Reserve, in plan order, where AddBlob would have put it), and
//     the file is preallocated to them, so each packer writes the blob it
//     packed itself, at once: there is no writer goroutine that would have
//     to wait for a P after every write (on 2 cores, both busy, that wait
//     stalled the whole pipeline).
//   - Packed blobs, raw ones included, are in BlobAlign-aligned buffers, which
//     the Writer splices into the file's page cache (layout.Writer): a
//     packer blocked in a write leaves its P to the others. The Writer
//     starts the write-back and syncs the file in the background as it
//     grows.
//   - The packers compute each blob's checksum as they pack it, a column
//     group at a time, while it is in their cache.
//   - The pipeline runs with one P more than there are cores (morePs).
//
//   - An entry larger than pieceBytes goes through the pipeline in pieces
//     (pieces): runs of whole column groups of a matrix, which
//     planar.PackGroups packs apart and which lie one after the other in
//     the source and in the blob, or runs of bytes of a raw entry. The
//     hasher hashes the pieces in order, the packers checksum them apart,
//     and the caller joins their checksums (layout.CombineChecksums). So
//     the arenas need not hold a whole output or embedding matrix of a
//     large vocabulary (147 MB in Q4_0 for 128,256 x 2,048): held whole,
//     two such buffers of fresh memory took the anonymous memory of a
//     1 GB model to 460 MiB and its pack to 2.7-3.9 s in place of 1.0-2.2
//     on the development VM (its first touches of memory are slow).
//
// The output is the serial loop's byte for byte (writeTensorsSerial in the
// tests): the blobs lie where AddBlob in plan order would have put them,
// and the digest sees the tensors in plan order. The two arenas hold
// inFlight/4 bytes each, or the largest piece (up to inFlight), and a
// piece larger than its arena (a single column group larger than
// inFlight) waits until the arena is empty and gets a buffer of its own
// (which the arena keeps for the next), so the memory held stays within 2
// inFlight, plus twice the largest piece when one is larger than
// inFlight, whatever the model's size.

// inFlight bounds the sizes of the two arenas: the source bytes between
// reading and both hashing and packing, and the packed bytes between
// packing and writing (a variable so that the tests can make entries
// outgrow it).
var inFlight int64 = 64 << 20

// pieceBytes is the size above which an entry goes through the pipeline in
// pieces (a variable so that the tests can make every entry a few pieces).
var pieceBytes int64 = 16 << 20

// writeTensors reads, hashes, repacks and writes the tensors of plan, in
// plan order, appending their manifest entries to m; digest gets the
// metadata (hashMetadata), then the tensors. It is a variable so that the
// tests can run the serial reference instead.
var writeTensors = writeTensorsPipelined

// packJob is one piece of a plan entry (all of it, or a run of its column
// groups or bytes: pieces) on its way through the pipeline.
type packJob struct {
	e       *Entry
	blob    int64         // where the entry's blob goes in the file (Writer.Reserve)
	off     int64         // where the piece goes in the file (blob, plus the piece's offset in the blob)
	lo, hi  int64         // the piece's bytes of the parts, in row order
	c0, c1  int           // the column groups of a planar entry's piece
	size    int64         // the piece's bytes of the blob
	last    bool          // the entry's last piece (and its first too, lo = 0: the entry whole)
	src     []byte        // the parts' bytes, in row order, from the sources' arena
	srcSpan *span         // src's span in the sources' arena
	unread  bool          // the reader stopped before this entry
	dst     []byte        // the packed blob (a copy of src for raw entries), from the blobs' arena
	dstSpan *span         // dst's span in the blobs' arena
	crc     uint32        // layout.Checksum(dst)
	users   atomic.Int32  // stages still reading src (the hasher, the packer)
	err     error         // a pack or write error, set before done is closed
	done    chan struct{} // closed when the blob is written (or err is set)
}

// arenaSize is the size of an arena whose largest buffer is largest bytes:
// a quarter of inFlight, or the largest buffer (up to inFlight). With the
// hasher running ahead on its own buffers, packers that wait for a write
// cost nothing, and each page of an arena is faulted in once (on the
// development VM, first touches of fresh memory cost 0.1 s for 64 MiB).
func arenaSize(largest int64) int64 { return max(inFlight/4, min(largest, inFlight)) }

func writeTensorsPipelined(ctx context.Context, opt *Options, g *layout.GGUF, src io.ReaderAt, plan *Plan, w *layout.Writer, m *layout.Manifest, digest hash.Hash) (err error) {
	var total int64
	var jobs []*packJob
	for _, e := range plan.Entries {
		total += e.Size
		off, err := w.Reserve(e.Size)
		if err != nil {
			return err
		}
		for _, j := range pieces(e, pieceBytes) {
			j.blob, j.off = off, off+j.off
			j.done = make(chan struct{})
			j.users.Store(2)
			jobs = append(jobs, j)
		}
	}
	if err := w.Preallocate(); err != nil {
		return err
	}
	// At most cores-1 packers pack at a time (cpu; one on one core), so that
	// the reader and the hasher keep a core, and two more goroutines can be
	// in their writes meanwhile.
	computing := max(1, runtime.GOMAXPROCS(0)-1)
	defer morePs()()
	workers := computing + 2
	cpu := make(chan struct{}, computing)
	var srcMax, dstMax int64
	for _, j := range jobs {
		srcMax, dstMax = max(srcMax, j.hi-j.lo), max(dstMax, j.size)
	}
	srcs, dsts := newArena(arenaSize(srcMax)), newArena(arenaSize(dstMax))
	defer srcs.free() // after the stages are done (the deferred wait below runs first)
	defer dsts.free()
	var canceled atomic.Bool // the caller returns an error: the hasher stops hashing
	toDispatch := make(chan *packJob, len(jobs))
	toPack := make(chan *packJob, len(jobs))
	var wg sync.WaitGroup
	source := &source{g: g, r: src}

	// doneWithSrc is called by the hasher and by the packer when they no
	// longer read j.src; the second call gives it back.
	doneWithSrc := func(j *packJob) {
		if j.users.Add(-1) == 0 {
			srcs.put(j.srcSpan)
		}
	}

	// The reader: every entry's parts, read into a buffer of the sources'
	// arena, in plan order, handed on to be packed and to be hashed. It
	// waits for nothing but room in its arena: the packers wait for buffers
	// of their own. If it stops early (a read error, or a cancel by the
	// caller), the entries it did not hand on are done with no src.
	var readErr error
	toHash := make(chan *packJob, len(jobs))
	wg.Go(func() {
		defer close(toDispatch)
		defer close(toHash)
		for i, j := range jobs {
			stop := func(from int) {
				for _, j := range jobs[from:] {
					j.unread = true
					close(j.done)
				}
			}
			var ok bool
			if j.src, j.srcSpan, ok = srcs.get(int(j.hi - j.lo)); !ok {
				stop(i)
				return
			}
			if err := source.read(j.e, j.lo, j.src); err != nil {
				readErr = err
				srcs.put(j.srcSpan)
				stop(i)
				return
			}
			toDispatch <- j
			toHash <- j
		}
	})

	// The hasher: every entry's parts in plan order (the digest's order).
	// The hash can set the pipeline's pace (one BLAKE3 over the whole
	// model), so it does nothing else: the reader reads ahead of it, and it
	// runs ahead of the packers rather than in step with their writes (on the
	// development VM, as the reader that also hashed, it waited 0.3-0.9 s
	// of 2.3 s for them when one budget held both). After a cancel it
	// hashes nothing more. The metadata comes first, hashed here beside the
	// reader's first reads rather than before the pipeline starts (10-13 ms
	// for a vocabulary of 128 Ki tokens).
	wg.Go(func() {
		hashMetadata(digest, g)
		for j := range toHash {
			if !canceled.Load() {
				hashPiece(digest, j)
			}
			doneWithSrc(j)
		}
	})

	// The dispatcher: each entry the reader handed on, in plan order, to
	// the packers once the blobs' arena has room for its packed blob. An
	// entry it cannot dispatch (the caller's cancel) is done unpacked.
	wg.Go(func() {
		defer close(toPack)
		for j := range toDispatch {
			var ok bool
			if j.dst, j.dstSpan, ok = dsts.get(int(j.size)); !ok {
				j.err = errCanceled
				doneWithSrc(j)
				close(j.done)
				continue
			}
			toPack <- j
		}
	})

	// The packers: pack, checksum and write each blob.
	for range workers {
		wg.Go(func() {
			for j := range toPack {
				j.err = pack(opt, w, j, cpu)
				dsts.put(j.dstSpan)
				doneWithSrc(j)
				close(j.done)
			}
		})
	}

	// The caller: manifest entries (their pieces' checksums joined) and
	// progress in plan order. On an error
	// it stops the reader, the hasher and the dispatcher (cancel); it waits
	// for the other stages to finish what they hold before returning, and
	// then returns the reader's error, if any.
	var done int64
	var crc uint32 // of the current entry's pieces so far
	nTensors := len(m.Tensors)
	entries := len(plan.Entries)
	defer func() {
		if err != nil {
			canceled.Store(true)
			srcs.cancel()
			dsts.cancel()
		}
		wg.Wait()
		if err == nil && readErr != nil {
			err = readErr
		}
		if err == nil && len(m.Tensors) != nTensors+entries {
			err = fmt.Errorf("%s: the pipeline stopped after %d of %d tensors", opt.Input, len(m.Tensors)-nTensors, entries)
		}
	}()
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-j.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if j.unread {
			return nil // the reader stopped: its error is returned above
		}
		if j.err != nil {
			return j.err
		}
		if j.lo == 0 {
			crc = j.crc
		} else {
			crc = layout.CombineChecksums(crc, j.crc, j.size)
		}
		if !j.last {
			continue
		}
		j.e.BlobRef = layout.BlobRef{Offset: j.blob, Size: j.e.Size, CRC32C: crc}
		m.Tensors = append(m.Tensors, j.e.TensorEntry)
		done += j.e.Size
		if opt.Progress != nil {
			opt.Progress(done, total, j.e.Name)
		}
	}
	return nil
}

// pieces splits e into the pieces the pipeline handles apart: e whole when
// its parts and its blob are no larger than max, else runs of whole column
// groups (planar.PackGroups) with at most max bytes of source and of blob
// where a group is no larger, or runs of max bytes of a raw entry. Their
// offsets are in the blob; lo..hi cover the parts' bytes and size the
// blob's, each in order and once.
func pieces(e *Entry, max int64) []*packJob {
	n := entryBytes(e)
	if n <= max && e.Size <= max {
		return []*packJob{{e: e, hi: n, c1: e.geom.Columns, size: e.Size, last: true}}
	}
	var js []*packJob
	if e.Format == layout.FormatRaw {
		for lo := int64(0); lo < n; lo += max {
			hi := min(lo+max, n)
			js = append(js, &packJob{e: e, off: lo, lo: lo, hi: hi, size: hi - lo})
		}
	} else {
		g := e.geom
		src := func(c int) int64 { return int64(g.SourceOffset(c)) }
		for c0 := 0; c0 < g.Columns; {
			c1 := c0 + 1
			for c1 < g.Columns && src(c1+1)-src(c0) <= max && int64(g.GroupOffset(c1+1)-g.GroupOffset(c0)) <= max {
				c1++
			}
			js = append(js, &packJob{e: e, off: int64(g.GroupOffset(c0)), lo: src(c0), hi: src(c1), c0: c0, c1: c1, size: int64(g.GroupOffset(c1) - g.GroupOffset(c0))})
			c0 = c1
		}
	}
	js[len(js)-1].last = true
	return js
}

// morePs gives the pipeline one P more than the machine has cores and
// returns the function that puts GOMAXPROCS back. The reader and the
// packers leave their P at every system call (populating and dropping
// mapped pages, the writes); with one P a core, each return from
// a call waited for a P until a busy goroutine was preempted (up to 10 ms),
// and the reader is the pipeline's pace. With a P more, the kernel, which
// lets a thread woken from a call run at once, decides instead: 1.23 s
// against 1.35 s for the 1 GB Q4_0 model on the 2-core development VM
// (medians of 8, interleaved). A GOMAXPROCS already above the core count
// is left as it is. Setting GOMAXPROCS stops the runtime's automatic
// updates of it (from the cgroup quota), so restore gives them back with
// SetDefaultGOMAXPROCS unless the GOMAXPROCS variable had set the value.
func morePs() (restore func()) {
	n := runtime.GOMAXPROCS(0)
	if n > runtime.NumCPU() {
		return func() {}
	}
	runtime.GOMAXPROCS(n + 1)
	if os.Getenv("GOMAXPROCS") == "" {
		return runtime.SetDefaultGOMAXPROCS
	}
	return func() { runtime.GOMAXPROCS(n) }
}

// pack packs j.src into j.dst (a raw entry is copied: the blob goes to the
// file from an arena buffer, padded to whole pages when the piece is the
// whole blob, as every other blob does),
// computes its checksum and writes it at j.off. The checksum of a packed
// blob is computed a column group at a time, as planar.PackGroups finishes
// each, while the group is in the cache: on the development VM, a pass
// over the whole blob after packing it read it back from memory.
func pack(opt *Options, w *layout.Writer, j *packJob, cpu chan struct{}) error {
	var err error
	cpu <- struct{}{}
	if j.e.Format != layout.FormatRaw {
		crc := uint32(0)
		err = planar.PackGroups(j.e.geom, j.c0, j.c1, j.src, j.dst, func(b []byte) { crc = layout.UpdateChecksum(crc, b) })
		j.crc = crc
	} else if copy(j.dst, j.src) != len(j.dst) {
		err = fmt.Errorf("%d bytes of data for a raw blob of %d", len(j.src), len(j.dst))
	} else {
		j.crc = layout.Checksum(j.dst)
	}
	<-cpu
	if err != nil {
		return fmt.Errorf("%s: tensor %q: %w", opt.Input, j.e.Name, err)
	}
	dst := j.dst
	if j.lo > 0 || !j.last {
		// A piece of an entry: its bytes alone (the padding after the blob
		// is preallocated zeros, and after a piece lies the next one).
		dst = dst[:len(dst):len(dst)]
	}
	if err := w.WriteBlobAt(dst, j.off); err != nil {
		return fmt.Errorf("tensor %q: %w", j.e.Name, err)
	}
	return nil
}

// errCanceled is the error of an entry left unpacked after the pipeline was
// canceled (the caller has returned its own error by then).
var errCanceled = errors.New("pipeline canceled")
