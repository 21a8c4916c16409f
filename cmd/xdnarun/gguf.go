package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/xdna-go/xdna/cache"
	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout/pack"
	"github.com/xdna-go/xdna/runtime/npu/probe"
)

// packedPath returns path when it is not a GGUF file, else the path of its
// pack in the cache (cache.GGUFPack: keyed by the GGUF's content,
// cache.FileKey, and the target), packing it there first if it is not yet, with the pack's
// progress on o.warn.
func packedPath(ctx context.Context, path string, o loadOptions) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != "GGUF" {
		return path, nil // not a GGUF: layout.Open says what it is
	}
	warn := o.warn
	if warn == nil {
		warn = io.Discard
	}
	target := "xdna2"
	if infos, err := probe.Probe(); err == nil && len(infos) > 0 && infos[0].Target() != "" {
		target = infos[0].Target()
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	key, err := cache.FileKey(f, &ctxReader{ctx, f})
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	out, err := cache.GGUFPack(key, target)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(out); err == nil {
		fmt.Fprintf(warn, "xdnarun: %s: running its pack from the cache (%s)\n", filepath.Base(path), out)
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("the pack cache: %w", err)
	}
	fmt.Fprintf(warn, "xdnarun: %s is a GGUF file: packing it once for %s into %s\n", filepath.Base(path), target, out)
	bar := cli.NewProgress(warn, "packing")
	_, err = pack.Run(ctx, &pack.Options{Input: path, Output: out, Target: target, Catalog: kernelsel.Default(),
		CPUMaxN: 256, Progress: bar.Update})
	bar.Done()
	if err != nil {
		return "", err
	}
	return out, nil
}

// ctxReader stops reading when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if r.ctx.Err() != nil {
		return 0, cli.Err(r.ctx)
	}
	return r.r.Read(p)
}
