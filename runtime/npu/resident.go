package npu

import "fmt"

// Resident weights: within a pin budget (Options.Resident), a matrix's
// chunks get buffers of their own, filled once from the blob in the layout
// the design consumes (StageChunk) and synced once; its dispatches then read
// them where they are, with no host copy per call. Everything else streams
// through the ring.
//
// Which matrices: in decode every planned matrix is read exactly once per
// token, so every resident byte saves exactly one copied byte per token,
// whichever matrix it belongs to; the order decides only how well the
// budget is filled. The Backend takes matrices first-fit in the order of
// their first call (the model's execution order): deterministic for a
// model, and the budget is filled to within one matrix of its size. The
// pinned bytes are the staged chunks' (row blocks padded to the design),
// not the packed tensor's.

// progressStep is the resident bytes filled between two progress lines.
const progressStep = 256 << 20

// resBuf is one resident chunk.
type resBuf struct {
	bo   BO
	size int
}

// makeResident gives mt's chunks resident buffers if they fit the rest of
// the budget; it returns false, leaving mt streamed, otherwise or when the
// device refuses a buffer (said once).
func (b *Backend) makeResident(mt *mat) bool {
	if b.opt.Resident <= 0 || len(mt.chunks) == 0 {
		return false
	}
	var need int64
	for _, ch := range mt.chunks {
		need += int64(ch.Bytes)
	}
	if b.stats.ResidentBytes+need > b.opt.Resident {
		return false
	}
	res := make([]resBuf, 0, len(mt.chunks))
	undo := func() {
		for _, r := range res {
			b.free(r.bo, r.size)
		}
	}
	for _, ch := range mt.chunks {
		bo, host, err := b.alloc(BOData, ch.Bytes)
		if err != nil {
			undo()
			b.residentRefused(mt.name, err)
			return false
		}
		res = append(res, resBuf{bo, ch.Bytes})
		StageChunk(mt.d, mt.m.G, mt.m.Blob, ch, host)
		if err := b.dev.Sync(bo, ToDevice, 0, ch.Bytes); err != nil {
			undo()
			b.residentRefused(mt.name, fmt.Errorf("sync: %w", err))
			return false
		}
		b.stats.Syncs++
		b.stats.BytesToDevice += int64(ch.Bytes)
		b.stats.ResidentFilled += int64(ch.Bytes)
	}
	mt.res = res
	// Progress for large budgets: a line each time another progressStep
	// has been filled (the fill happens at each matrix's first call, so
	// during the first token).
	if b.stats.ResidentBytes/progressStep != (b.stats.ResidentBytes+need)/progressStep {
		fmt.Fprintf(b.warn, "npu: resident weights: %d MiB filled (budget %d MiB)\n", (b.stats.ResidentBytes+need)>>20, b.opt.Resident>>20)
	}
	b.stats.ResidentBytes += need
	b.stats.ResidentMats++
	return true
}

// residentRefused says once that the device refused a resident buffer;
// that matrix and every later one stream through the ring.
func (b *Backend) residentRefused(name string, err error) {
	b.note("resident weights: %s: %s; it and every matrix not yet resident stream through the ring", name, pinAdvice(err))
	b.opt.Resident = 0
}

// dropResident frees mt's resident buffers (its blob changed).
func (b *Backend) dropResident(mt *mat) {
	for _, r := range mt.res {
		b.free(r.bo, r.size)
		b.stats.ResidentBytes -= int64(r.size)
	}
	if mt.res != nil {
		b.stats.ResidentMats--
	}
	mt.res = nil
}
