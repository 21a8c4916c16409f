package main

import (
	"context"
	"io"
)

type pullOptions struct {
	plainHTTP bool
	device    string
	stderr    io.Writer
}

// resolveModel returns the local path of the model argument.
func resolveModel(ctx context.Context, arg string, o *pullOptions) (string, error) {
	return arg, nil
}
