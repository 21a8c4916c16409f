// Command xdnapack compiles a GGUF model into an .xdna package: the weights
// repacked exactly into planar blobs, a kernel slot planned for every matrix.
package main

import (
	"os"

	"github.com/xdna-go/xdna/cmd/internal/cli"
)

func main() { os.Exit(cli.Main("xdnapack", newRootCmd(), os.Args[1:], os.Stderr)) }
