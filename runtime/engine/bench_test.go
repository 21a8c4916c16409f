package engine

import (
	"fmt"
	"testing"
)

// weightBytes returns the packed size of every matrix the forward pass
// reads for one token (the embedding row aside).
func weightBytes(m *Model) int64 {
	n := int64(m.output.Bytes())
	for _, l := range m.layers {
		for _, x := range l.mat {
			if x != nil {
				n += int64(x.Bytes())
			}
		}
	}
	return n
}

// BenchmarkDecode measures one-token decode at positions 64 to 200 (MB/s:
// weight bytes streamed per token).
func BenchmarkDecode(b *testing.B) {
	for _, model := range []string{"stories260K-q4_0", "tiny-llama-q4_0", "tiny-llama-q4_k_m", "tiny-llama-q8_0"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", model, threads), func(b *testing.B) {
				m := loadModel(b, model, 4, true, Options{Threads: threads})
				s := m.NewState(256)
				prompt := make([]int32, 64)
				for i := range prompt {
					prompt[i] = int32((1 + i*7) % m.Vocab())
				}
				b.SetBytes(weightBytes(m))
				b.ReportAllocs()
				if _, err := s.Prefill(prompt); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if s.Pos() >= 200 {
						b.StopTimer()
						s.Reset()
						if _, err := s.Prefill(prompt); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					if _, err := s.Decode(42); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

// BenchmarkPrefill measures a 128-token prefill.
func BenchmarkPrefill(b *testing.B) {
	for _, model := range []string{"stories260K-q4_0", "tiny-llama-q4_0", "tiny-llama-q4_k_m", "tiny-llama-q8_0"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", model, threads), func(b *testing.B) {
				m := loadModel(b, model, 4, true, Options{Threads: threads})
				s := m.NewState(256)
				prompt := make([]int32, 128)
				for i := range prompt {
					prompt[i] = int32((1 + i*7) % m.Vocab())
				}
				b.ReportAllocs()
				for b.Loop() {
					s.Reset()
					if _, err := s.Prefill(prompt); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
