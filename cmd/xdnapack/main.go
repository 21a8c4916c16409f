// Command xdnapack compiles a GGUF model into an .xdna package: the weights
// repacked exactly into planar blobs, a kernel slot planned for every matrix.
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
		fmt.Fprintln(os.Stderr, "xdnapack:", err)
		os.Exit(1)
	}
}
