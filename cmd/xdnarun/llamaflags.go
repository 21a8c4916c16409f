package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// llamaShort maps llama.cpp's single-dash long flags, which pflag would read
// as clusters of one-letter flags (-ngl as -n gl), to their double-dash names.
var llamaShort = map[string]string{
	"-ngl": "--n-gpu-layers",
	"-sm":  "--split-mode",
	"-mg":  "--main-gpu",
	"-ts":  "--tensor-split",
	"-fa":  "--flash-attn",
	"-sys": "--system",
	"-cnv": "--conversation",
	"-ctk": "--cache-type-k",
	"-ctv": "--cache-type-v",
	"-dev": "--gpu-device",
}

// llamaArgs rewrites llama.cpp's single-dash long flags (-ngl 99, -sys=...)
// to the double-dash names xdnarun's flags have. Arguments after "--" and
// the values of flags that take text are left alone.
func llamaArgs(args []string) []string {
	out := make([]string, 0, len(args))
	value := false // args[i] is the value of the flag before it
	for i, a := range args {
		if value {
			out, value = append(out, a), false
			continue
		}
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, val, hasVal := strings.Cut(a, "=")
		if long, ok := llamaShort[name]; ok {
			name = long
			if hasVal {
				a = long + "=" + val
			} else {
				a = long
			}
		}
		value = !hasVal && takesText[name]
		out = append(out, a)
	}
	return out
}

// takesText lists the flags whose value is text, which may look like a flag
// (the prompt "-sys").
var takesText = map[string]bool{
	"-p": true, "--prompt": true, "--system": true, "-f": true, "--file": true,
	"-m": true, "--model": true, "--chat-template": true,
}

// llamaFlags are llama.cpp's GPU and memory flags: xdnarun accepts them so
// that a llama.cpp command line runs, and says once that it ignores them;
// the KV cache types other than f16 are refused by name, and --flash-attn
// selects the attention arithmetic (engine.Options.FlashAttn).
type llamaFlags struct {
	ngl, mainGPU           int
	splitMode, tensorSplit string
	flashAttn, gpuDev      string
	cacheTypeK, cacheTypeV string
	mlock                  bool
}

func (l *llamaFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&l.ngl, "n-gpu-layers", 0, "llama.cpp's GPU offload (-ngl): ignored; xdnapack plans what runs on the NPU")
	f.IntVar(&l.ngl, "gpu-layers", 0, "the same as --n-gpu-layers")
	f.StringVar(&l.splitMode, "split-mode", "", "llama.cpp's multi-GPU split (-sm): ignored")
	f.IntVar(&l.mainGPU, "main-gpu", 0, "llama.cpp's main GPU (-mg): ignored")
	f.StringVar(&l.tensorSplit, "tensor-split", "", "llama.cpp's tensor split (-ts): ignored")
	f.StringVar(&l.flashAttn, "flash-attn", "off", "attention as llama.cpp computes it with flash attention (-fa): on (or auto, llama.cpp's default) or off")
	f.Lookup("flash-attn").NoOptDefVal = "on"
	f.StringVar(&l.gpuDev, "gpu-device", "", "llama.cpp's -dev: ignored (xdnarun: --device)")
	f.StringVar(&l.cacheTypeK, "cache-type-k", "f16", "KV cache type (-ctk): only f16")
	f.StringVar(&l.cacheTypeV, "cache-type-v", "f16", "KV cache type (-ctv): only f16")
	f.BoolVar(&l.mlock, "mlock", false, "llama.cpp's --mlock: ignored")
	for _, n := range []string{"n-gpu-layers", "gpu-layers", "split-mode", "main-gpu", "tensor-split", "flash-attn", "gpu-device", "cache-type-k", "cache-type-v", "mlock"} {
		f.SetAnnotation(n, "llama.cpp", []string{"true"})
	}
}

// check refuses the cache types xdnarun does not have and notes, on w,
// each llama.cpp flag it ignores.
func (l *llamaFlags) check(cmd *cobra.Command, w io.Writer) error {
	for _, t := range []struct{ flag, v string }{{"cache-type-k", l.cacheTypeK}, {"cache-type-v", l.cacheTypeV}} {
		if t.v != "f16" {
			return fmt.Errorf("--%s %s: xdnarun's KV cache is f16 only", t.flag, t.v)
		}
	}
	switch l.flashAttn {
	case "on", "auto", "off":
	default:
		return fmt.Errorf("--flash-attn %s: want on, auto or off", l.flashAttn)
	}
	for _, n := range []string{"n-gpu-layers", "gpu-layers", "split-mode", "main-gpu", "tensor-split", "gpu-device", "mlock"} {
		if f := cmd.Flags().Lookup(n); f.Changed {
			fmt.Fprintf(w, "xdnarun: note: --%s %s ignored: a llama.cpp GPU/memory flag; the NPU runs what xdnapack planned (--device), the rest runs on the CPU\n", n, f.Value.String())
		}
	}
	return nil
}
