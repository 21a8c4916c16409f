// Command xdnarun runs an .xdna model: text generation, chat, tokenisation,
// perplexity and benchmarks, on the CPU (and, where present, the NPU).
package main

import (
	"os"

	"github.com/xdna-go/xdna/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Main("xdnarun", newRootCmd(), llamaArgs(os.Args[1:]), os.Stderr))
}
