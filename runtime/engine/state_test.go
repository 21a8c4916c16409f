package engine

import (
	"fmt"
	"slices"
	"testing"
)

// TestStateBytes checks StateBytes against what NewState allocates, for
// both cache types and a context below the batch, and its overflow error.
func TestStateBytes(t *testing.T) {
	s := newSynth(t, "qwen3", 3, 4)
	for _, cache := range []CacheType{CacheF32, CacheF16} {
		m, err := New(s.p, s.w, Options{Threads: 2, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		for _, ctx := range []int{7, 300} {
			st := m.NewState(ctx)
			f32 := [][]float32{st.kc, st.vc, st.x, st.xn, st.tmp, st.qkv, st.q, st.k, st.v, st.ao, st.gu, st.gate, st.up, st.cs, st.scores, st.qh, st.logits}
			var got int64
			for _, b := range f32 {
				got += 4 * int64(len(b))
			}
			got += 2 * int64(len(st.kc16)+len(st.vc16))
			want, err := m.StateBytes(ctx)
			if err != nil || want != got {
				t.Errorf("%s cache, ctx %d: StateBytes = %d, %v; NewState allocates %d", cache, ctx, want, err, got)
			}
		}
		if _, err := m.StateBytes(1 << 62); err == nil {
			t.Errorf("%s: StateBytes(2^62) did not overflow", cache)
		}
		m.Close()
	}
}

// TestTruncate checks that a state truncated to n and fed the rest gives
// the logits of a state fed the whole sequence at once.
func TestTruncate(t *testing.T) {
	s := newSynth(t, "llama", 5, 4)
	m, err := New(s.p, s.w, Options{Threads: 1, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	seq := []int32{1, 5, 9, 13, 17, 21, 25, 29, 33}
	a := m.NewState(32)
	if _, err := a.Prefill([]int32{1, 5, 9, 13, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	a.Truncate(4)
	if a.Pos() != 4 {
		t.Fatalf("Pos after Truncate(4) = %d", a.Pos())
	}
	a.Truncate(10) // past the position: nothing
	got, err := a.Prefill(seq[4:])
	if err != nil {
		t.Fatal(err)
	}
	got = slices.Clone(got)
	b := m.NewState(32)
	want, err := b.Prefill(seq)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-4 || d < -1e-4 {
			t.Fatalf("logit %d: %g after Truncate, %g fed at once", i, got[i], want[i])
		}
	}
}

// TestWindowedCache: a gemma3 state keeps only a window (and a batch) of
// positions for its windowed layers; StateBytes counts what NewState
// allocates; a state that wrapped its windowed rings many times gives the
// logits of the float64 reference (TestArchitecturesAgainstReference
// covers shorter runs); Truncate keeps a cut its rings still hold and
// drops the whole cache for one they do not.
func TestWindowedCache(t *testing.T) {
	s := newSynth(t, "gemma3", 7, 4) // window 3 on layers 0 and 2, batch 2 below
	m, err := New(s.p, s.w, Options{Threads: 1, Batch: 2, Cache: CacheF16})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.NewState(40)
	if want := []int{5, 40, 5}; !slices.Equal(st.ring, want) {
		t.Fatalf("ring sizes %v, want %v", st.ring, want)
	}
	got := int64(2 * (len(st.kc16) + len(st.vc16)))
	full := int64(2 * 40 * (m.kvDim + m.vDim) * s.p.Layers)
	t.Logf("KV cache of 40 positions: %d bytes, %d without windows (%d saved)", got, full, full-got)

	// Long enough to wrap the rings of the windowed layers.
	seq := make([]int32, 30)
	for i := range seq {
		seq[i] = int32((i*7 + 3) % s.p.VocabSize)
	}
	want := s.reference(seq, 1, nil)
	f32, err := New(s.p, s.w, Options{Threads: 1, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer f32.Close()
	a := f32.NewState(40)
	out, err := a.Prefill(seq[:5])
	if err != nil {
		t.Fatal(err)
	}
	compareLogits(t, "prefill", out, want[4])
	for j := 5; j < len(seq); j++ {
		if out, err = a.Decode(seq[j]); err != nil {
			t.Fatal(err)
		}
		compareLogits(t, fmt.Sprintf("decode at %d", j), out, want[j])
	}
	// A cut of one token: the rings (window 3 + batch 2) still hold the
	// window of position 29.
	a.Truncate(29)
	if a.Pos() != 29 {
		t.Fatalf("Truncate(29) at 30: Pos %d", a.Pos())
	}
	if out, err = a.Decode(seq[29]); err != nil {
		t.Fatal(err)
	}
	compareLogits(t, "decode after Truncate(29)", out, want[29])
	// A cut far back: the rings have lost that window; the cache restarts.
	a.Truncate(10)
	if a.Pos() != 0 {
		t.Fatalf("Truncate(10) at 30: Pos %d, want 0 (the window of 10 is gone)", a.Pos())
	}
}
