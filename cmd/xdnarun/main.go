// Command xdnarun runs an .xdna model: text generation, chat, tokenisation,
// perplexity and benchmarks, on the CPU (and, where present, the NPU).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "xdnarun:", err)
		os.Exit(1)
	}
}
