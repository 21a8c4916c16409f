package engine

import (
	"fmt"
	"math"

	"github.com/xdna-go/xdna/runtime/cpu"
)

// Perplexity measures m on tokens the way llama.cpp's llama-perplexity
// does: the text is cut into len(tokens)/ctx chunks of ctx tokens (the rest
// is dropped; at least two chunks' worth is required), each chunk is run
// from an empty cache with its first token replaced by BOS, and only the
// second half is scored: the logits at positions ctx/2 .. ctx-2 predict the
// tokens that follow them. The result is exp of the mean negative
// log-likelihood (log-softmax with the max subtracted and the sum of expf
// taken in float64, as llama-perplexity's log_softmax).
//
// tokens must be the text as the tokenizer returns it for a vocabulary
// that adds BOS (tokens[0] is BOS, and is what each chunk starts with). For
// a vocabulary that adds none, use PerplexityBOS with bos = -1.
func Perplexity(m *Model, tokens []int32, ctx int) (float64, error) {
	if len(tokens) == 0 {
		return 0, fmt.Errorf("perplexity of no tokens")
	}
	return PerplexityBOS(m, tokens, ctx, tokens[0])
}

// PerplexityBOS is Perplexity with the BOS token given: each chunk's first
// token is replaced by bos, or left as it is if bos < 0.
func PerplexityBOS(m *Model, tokens []int32, ctx int, bos int32) (float64, error) {
	if ctx < 4 {
		return 0, fmt.Errorf("perplexity context %d is too small", ctx)
	}
	if len(tokens) < 2*ctx {
		return 0, fmt.Errorf("perplexity needs at least %d tokens (2 x context %d), got %d", 2*ctx, ctx, len(tokens))
	}
	s := m.NewState(ctx)
	vocab := m.Vocab()
	logits := make([]float32, s.batch*vocab)
	chunk := make([]int32, ctx)
	first := ctx / 2
	var nll float64
	count := 0
	for c := 0; c+1 <= len(tokens)/ctx; c++ {
		start := c * ctx
		copy(chunk, tokens[start:start+ctx])
		if bos >= 0 {
			chunk[0] = bos
		}
		s.Reset()
		if err := s.check(chunk); err != nil {
			return 0, fmt.Errorf("chunk %d: %w", c, err)
		}
		for p0 := 0; p0 < ctx; p0 += s.batch {
			b := chunk[p0:min(p0+s.batch, ctx)]
			from := max(0, first-p0)
			if from >= len(b) {
				s.forward(b, len(b), nil)
				continue
			}
			s.forward(b, from, logits)
			for i := from; i < len(b); i++ {
				pos := p0 + i
				if pos > ctx-2 {
					break
				}
				row := logits[(i-from)*vocab : (i-from+1)*vocab]
				nll -= logSoftmax(row, int(tokens[start+pos+1]))
				count++
			}
		}
	}
	return math.Exp(nll / float64(count)), nil
}

// logSoftmax returns log p(tok) under logits: logits[tok] - max - log(sum
// of expf(l - max)), the sum in float64.
func logSoftmax(logits []float32, tok int) float64 {
	mx := logits[0]
	for _, v := range logits[1:] {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range logits {
		sum += float64(cpu.Expf(v - mx))
	}
	return float64(logits[tok]-mx) - math.Log(sum)
}
