package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sort"
	"time"
	"unsafe"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/internal/hugepage"
	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/npu"
)

func newPerplexityCmd() *cobra.Command {
	var lo loadOptions
	var file string
	cmd := &cobra.Command{
		Use:   "perplexity MODEL.xdna -f TEXT -c CTX",
		Short: "Perplexity of a text, by llama-perplexity's method",
		Long: `perplexity tokenises the text (with BOS), cuts it into chunks of CTX tokens,
evaluates each chunk from an empty cache and scores the second half of each
chunk, as llama.cpp's llama-perplexity does. The last line is "PPL = X".`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return fmt.Errorf("-f: a text file is required")
			}
			if !cmd.Flags().Changed("ctx-size") {
				lo.ctx = 512
			}
			if lo.ctx < 4 {
				return fmt.Errorf("-c %d: perplexity needs at least 4 tokens of context", lo.ctx)
			}
			text, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			l, err := load(cmd.Context(), args[0], lo)
			if err != nil {
				return err
			}
			defer l.Close()
			tokens := l.tok.Encode(string(text), true)
			if len(tokens) < 2*lo.ctx {
				return fmt.Errorf("%s: %d tokens, need at least 2*ctx = %d", file, len(tokens), 2*lo.ctx)
			}
			start := time.Now()
			ppl, err := perplexity(l, tokens, lo.ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d chunks of %d tokens in %.2fs\n", len(tokens)/lo.ctx, lo.ctx, time.Since(start).Seconds())
			fmt.Fprintf(cmd.OutOrStdout(), "PPL = %.4f\n", ppl)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "text file to score")
	addLoadFlags(cmd, &lo)
	return cmd
}

type benchOptions struct {
	loadOptions
	pp, tg, reps int
	depth        int
	json         bool
	cpuProfile   string
}

type benchResult struct {
	Model      string `json:"model"`
	Device     string `json:"device"`
	Threads    int    `json:"threads"`
	CPUKernels string `json:"cpu_kernels"`
	// Weights says where the CPU read the matrices from: mapped (the
	// package, in place) or memory (--no-mmap: a copy on huge pages).
	Weights string `json:"weights"`
	// WeightsHugePct is the share of the resident weights' memory on huge
	// pages after the run (hugepage.Share; absent where /proc/self/smaps
	// cannot tell).
	WeightsHugePct *float64 `json:"weights_huge_pct,omitempty"`
	PromptTokens   int      `json:"n_prompt"`
	GenTokens      int      `json:"n_gen"`
	Depth          int      `json:"n_depth"`
	Reps           int      `json:"reps"`
	PPTokS         float64  `json:"pp_tok_s"`
	TGTokS         float64  `json:"tg_tok_s"`
	WeightBytes    int64    `json:"weight_bytes_per_token"`
	WeightGBs      float64  `json:"weight_gb_s"`
	StreamGBs      float64  `json:"stream_read_gb_s"`
	BandwidthPct   float64  `json:"bandwidth_pct"`
	// With an NPU device (emu or npu): the cost model's prediction for the
	// plan, and what the device counted per decoded token.
	Predicted string        `json:"predicted,omitempty"`
	Counted   string        `json:"counted,omitempty"`
	Stats     *npu.PerToken `json:"device_per_token,omitempty"`
	// PinnedPeak is the most device-visible (pinned) host memory the run
	// held at once: the staging ring plus the small I/O buffers.
	PinnedPeak int64 `json:"pinned_peak_bytes,omitempty"`
	// ResidentBytes and ResidentMatrices are the weights kept resident
	// (--npu-resident); PredictedStreaming the prediction with none.
	ResidentBytes      int64   `json:"resident_bytes,omitempty"`
	ResidentMatrices   int64   `json:"resident_matrices,omitempty"`
	PredictedStreaming float64 `json:"predicted_streaming_tok_s,omitempty"`
}

func newBenchCmd() *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench MODEL.xdna [-p 128] [-n 64] [-d 0] [-r 3] [-t 2] [--json]",
		Short: "Prefill and decode speed, weight bandwidth, and the machine's read bandwidth",
		Long: `bench times a prefill of -p tokens and a decode of -n tokens, -r times, and
reports medians: tokens per second, the effective weight bandwidth of decode
(bytes of weights read per token times tokens per second), and the machine's
streaming-read bandwidth with the same threads, measured twice after each
decode (a 512 MiB buffer summed with vector loads that prefetch ahead, the
fastest read of memory the program does) so that the two see the same
machine. With -d, each prefill and each decode starts with that many tokens
already in the cache (prefilled untimed before it), as llama-bench's -d: the
speed at a depth of context.`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), args[0], o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.pp, "n-prompt", "p", 128, "prompt tokens to prefill")
	f.IntVarP(&o.tg, "n-gen", "n", 64, "tokens to decode")
	f.IntVarP(&o.depth, "n-depth", "d", 0, "tokens already in the cache when each prefill and decode starts (prefilled untimed)")
	f.IntVarP(&o.reps, "repetitions", "r", 3, "repetitions (the median is reported)")
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the timed prefill and decode to this file (read it with go tool pprof; the stream-read passes show as cpu.sumStreamAVX2)")
	addLoadFlags(cmd, &o.loadOptions)
	return cmd
}

func runBench(ctx context.Context, path string, o *benchOptions, stdout, stderr io.Writer) error {
	if o.pp < 1 || o.tg < 1 || o.reps < 1 {
		return fmt.Errorf("-p %d -n %d -r %d: each must be >= 1", o.pp, o.tg, o.reps)
	}
	if o.depth < 0 {
		return fmt.Errorf("-d %d: the depth must be >= 0", o.depth)
	}
	if o.ctx == 0 {
		o.ctx = o.depth + o.pp + o.tg + 1
	}
	if o.depth+o.pp+o.tg > o.ctx {
		return fmt.Errorf("-d %d + -p %d + -n %d exceeds the context -c %d", o.depth, o.pp, o.tg, o.ctx)
	}
	if o.warn == nil {
		o.warn = stderr // device notes: auto's choice, the resident budget, fallbacks
	}
	l, err := load(ctx, path, o.loadOptions)
	if err != nil {
		return err
	}
	defer l.Close()
	m := l.file.Manifest
	vocab := m.Model.VocabSize
	r := rand.New(rand.NewPCG(1, 2))
	prompt := make([]int32, o.pp)
	for i := range prompt {
		prompt[i] = int32(r.IntN(vocab))
	}
	depth := make([]int32, o.depth)
	for i := range depth {
		depth[i] = int32(r.IntN(vocab))
	}
	// fill empties the cache and prefills the depth tokens, untimed.
	fill := func(st *engine.State) error {
		st.Reset()
		if len(depth) == 0 {
			return nil
		}
		_, err := st.Prefill(depth)
		return err
	}
	st := l.model.NewState(o.ctx)
	stream, freeStream := newStreamBuf()
	defer freeStream()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile %s: %w", o.cpuProfile, err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile() // on an early return; a no-op after the stop below
	}
	var pps, tgs, gbs []float64
	var counted npu.Stats
	for rep := 0; rep < o.reps; rep++ {
		if err := fill(st); err != nil {
			return err
		}
		t0 := time.Now()
		if _, err := st.Prefill(prompt); err != nil {
			return err
		}
		pps = append(pps, float64(o.pp)/time.Since(t0).Seconds())
		if err := fill(st); err != nil {
			return err
		}
		if len(depth) == 0 {
			// Decoding starts after one token, whose prefill is not timed.
			if _, err := st.Prefill(prompt[:1]); err != nil {
				return err
			}
		}
		var before npu.Stats
		if l.backend != nil {
			before = l.backend.Stats()
		}
		t1 := time.Now()
		for i := 0; i < o.tg; i++ {
			if _, err := st.Decode(prompt[(i+1)%len(prompt)]); err != nil {
				return err
			}
		}
		tgs = append(tgs, float64(o.tg)/time.Since(t1).Seconds())
		if l.backend != nil {
			counted = l.backend.Stats().Sub(before)
		}
		// The streaming read right after each decode, so that the ratio
		// compares the two under the same conditions of the machine.
		// Each repetition's figure is the mean of its two reads, and the
		// table's the median of those figures, so that the two agree.
		gbs = append(gbs, (stream.read(o.threads)+stream.read(o.threads))/2)
		fmt.Fprintf(stderr, "rep %d: pp %.1f tok/s, tg %.1f tok/s, stream-read %.2f GB/s\n", rep+1, pps[rep], tgs[rep], gbs[rep])
	}
	pprof.StopCPUProfile()
	res := benchResult{Model: m.Source.Name, Device: l.device, Threads: o.threads, CPUKernels: cpu.SIMD(), Weights: l.weightsFrom(), PromptTokens: o.pp, GenTokens: o.tg, Depth: o.depth, Reps: o.reps,
		PPTokS: median(pps), TGTokS: median(tgs), WeightBytes: decodeWeightBytes(l)}
	res.WeightGBs = float64(res.WeightBytes) * res.TGTokS / 1e9
	res.StreamGBs = median(gbs)
	res.BandwidthPct = 100 * res.WeightGBs / res.StreamGBs
	huge := "?"
	if resident, h, err := hugepage.Share(l.weightsMemory()); err == nil && resident > 0 {
		pct := 100 * float64(h) / float64(resident)
		res.WeightsHugePct, huge = &pct, fmt.Sprintf("%.0f%%", pct)
	}
	if l.backend != nil {
		tgt, err := kernelsel.Default().Target(m.Package.Target)
		if err != nil {
			return err
		}
		stats := l.backend.Stats()
		p := npu.PredictResident(m.Tensors, tgt, res.StreamGBs, npu.DefaultRingSize, stats.ResidentBytes)
		figures := "catalog defaults"
		c, path, err := readCalibration(m.Package.Target, l.device)
		if err != nil {
			fmt.Fprintf(stderr, "xdnarun: %v; using the catalog's figures\n", err)
		} else if c != nil {
			if p, err = npu.PredictCalibratedResident(m.Tensors, tgt, res.StreamGBs, c, stats.ResidentBytes); err != nil {
				return err
			}
			figures = "calibrated: " + path
		}
		res.Predicted = p.String()
		res.Counted = p.Against(counted, o.tg)
		pt := counted.PerToken(o.tg)
		res.Stats = &pt
		res.PinnedPeak = stats.PinnedPeak
		res.ResidentBytes, res.ResidentMatrices = stats.ResidentBytes, stats.ResidentMats
		if stats.ResidentBytes > 0 { // the same figures with nothing resident
			s0 := npu.Predict(m.Tensors, tgt, res.StreamGBs)
			if c != nil {
				if s0, err = npu.PredictCalibrated(m.Tensors, tgt, res.StreamGBs, c); err != nil {
					return err
				}
			}
			res.PredictedStreaming = s0.TokensPerSecond()
		}
		fmt.Fprintf(stderr, "cost model (%s, %s): %s\n%s\npinned host memory, peak: %.1f MiB (resident weights %.1f MiB in %d matrices)\n",
			m.Package.Target, figures, res.Predicted, res.Counted, float64(res.PinnedPeak)/(1<<20), float64(stats.ResidentBytes)/(1<<20), stats.ResidentMats)
		if res.PredictedStreaming > 0 {
			fmt.Fprintf(stderr, "predicted without resident weights (all streamed through the ring): %.1f tok/s\n", res.PredictedStreaming)
		}
	}
	if o.json {
		return json.NewEncoder(stdout).Encode(res)
	}
	at := ""
	if o.depth > 0 {
		at = fmt.Sprintf(" @ d%d", o.depth)
	}
	fmt.Fprintf(stdout, "| model | device | threads | pp%d%s tok/s | tg%d%s tok/s | weights/token | weight GB/s | stream-read GB/s | %% of stream | cpu kernels | weights | on huge pages |\n", o.pp, at, o.tg, at)
	fmt.Fprintln(stdout, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	fmt.Fprintf(stdout, "| %s | %s | %d | %.1f | %.1f | %.1f MB | %.2f | %.2f | %.0f%% | %s | %s | %s |\n", res.Model, res.Device, res.Threads,
		res.PPTokS, res.TGTokS, float64(res.WeightBytes)/1e6, res.WeightGBs, res.StreamGBs, res.BandwidthPct, res.CPUKernels, res.Weights, huge)
	return nil
}

// decodeWeightBytes is the bytes of weights one decode step reads: every
// matrix but the token embedding (of which it reads one row) unless tied.
func decodeWeightBytes(l *loaded) int64 {
	var n int64
	_, _, tied := l.file.Tensor("output.weight")
	tied = !tied
	for _, t := range l.file.Manifest.Tensors {
		if t.Name == "token_embd.weight" && !tied {
			n += t.Size / int64(t.Shape[1])
			continue
		}
		n += t.Size
	}
	return n
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

var sink uint64

// streamBuf is the buffer of the streaming-read measurement: 512 MiB, far
// more than any cache, on huge pages where the kernel gives them
// (hugepage.Alloc), as the weights may be: the yardstick is the fastest
// read of memory the machine does (on the development VM the read from
// huge pages was 3-14% faster than from 4 KiB ones, alternated).
type streamBuf []uint64

func newStreamBuf() (streamBuf, func() error) {
	const size = 512 << 20
	mem, free, err := hugepage.Alloc(size)
	if err != nil { // no room to map: the heap's pages
		mem, free = make([]byte, size), func() error { return nil }
	}
	buf := unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), size/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	return buf, free
}

// read measures the machine's streaming-read bandwidth in GB/s: threads
// goroutines each sum their share of the buffer (cpu.SumStream).
func (b streamBuf) read(threads int) float64 {
	t0 := time.Now()
	sink += cpu.SumStream(b, threads)
	read := len(b) / threads * threads * 8
	return float64(read) / time.Since(t0).Seconds() / 1e9
}

func perplexity(l *loaded, tokens []int32, ctx int, progress io.Writer) (float64, error) {
	bos := int32(-1)
	if l.tok.Vocab().AddBOS {
		bos = l.tok.BOS()
	}
	return engine.PerplexityBOS(l.model, tokens, ctx, bos)
}
