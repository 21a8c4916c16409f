package engine

import (
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
