package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/registry"
	"github.com/xdna-go/xdna/runtime/npu/probe"
)

type pullOptions struct {
	plainHTTP bool
	device    string
	stderr    io.Writer
	// npus is a test hook: the targets of this machine's NPUs (nil: probe).
	npus func() ([]string, error)
}

// errTarget marks a package built for another target than the NPU.
var errTarget = errors.New("wrong target")

// checkTarget refuses a package for target when it must run on an NPU
// (--device npu) of another target, or when there is no NPU at all. The
// CPU runs a package of any target (auto falls back to it).
func checkTarget(device, target string, npus func() ([]string, error)) error {
	if device != "npu" {
		return nil
	}
	have, err := npus()
	if len(have) == 0 {
		why := "none found"
		if err != nil {
			why = err.Error()
		}
		return fmt.Errorf("--device npu: no NPU on this machine (%s); this package is for %s: run it with --device cpu", why, target)
	}
	for _, t := range have {
		if t == target {
			return nil
		}
	}
	return fmt.Errorf("%w: the package is built for %s, this machine's NPU is %s: pull a package packed for %s, or run with --device cpu", errTarget, target, have[0], have[0])
}

func probeTargets() ([]string, error) {
	infos, err := probe.Probe()
	var ts []string
	for i := range infos {
		if t := infos[i].Target(); t != "" {
			ts = append(ts, t)
		}
	}
	return ts, err
}

func (o *pullOptions) registryOptions() registry.PullOptions {
	npus := o.npus
	if npus == nil {
		npus = probeTargets
	}
	po := registry.PullOptions{
		Options:     registry.Options{PlainHTTP: o.plainHTTP},
		CheckTarget: func(t string) error { return checkTarget(o.device, t, npus) },
		Log:         o.stderr,
	}
	return po
}

// pull fetches ref into s, drawing the download's progress on stderr.
func (o *pullOptions) pull(ctx context.Context, s *registry.Store, ref string) (*registry.Model, error) {
	po := o.registryOptions()
	p := cli.NewProgress(o.stderr, "pull "+ref)
	po.Progress = func(done, total int64) { p.Update(done, total, "") }
	m, err := s.Pull(ctx, ref, po)
	p.Done()
	return m, err
}

// resolveModel returns the file to load for a model argument: the argument
// itself when it names a file or does not look like REGISTRY/REPO:TAG;
// else the unpacked package in the store, pulled first if it is not there.
func resolveModel(ctx context.Context, arg string, o *pullOptions) (string, error) {
	if _, err := os.Stat(arg); err == nil || !registry.LooksLikeRef(arg) {
		return arg, nil
	}
	s, err := registry.OpenStore()
	if err != nil {
		return "", err
	}
	m, err := s.Resolve(arg)
	if errors.Is(err, registry.ErrNotInStore) {
		fmt.Fprintf(o.stderr, "xdnarun: %s is not in the store; pulling it\n", arg)
		m, err = o.pull(ctx, s, arg)
	} else if err == nil {
		po := o.registryOptions()
		err = po.CheckTarget(m.Annotations[registry.AnnotationTarget])
	}
	if err != nil {
		return "", err
	}
	return m.Path, nil
}

func newPullCmd() *cobra.Command {
	o := &pullOptions{}
	cmd := &cobra.Command{
		Use:   "pull REGISTRY/REPO:TAG|REGISTRY/REPO@DIGEST",
		Short: "Fetch a packed model from an OCI registry into the local store",
		Long: `pull fetches a model pushed with xdnapack push into the store under
$XDG_CACHE_HOME/xdna/oci (else ~/.cache/xdna/oci), checks every blob against
its digest, and unpacks it. An interrupted pull resumes where it stopped.
Registries on localhost or 127.0.0.1 are reached over plain HTTP; any other
over HTTPS unless --plain-http. Credentials come from the docker config
($DOCKER_CONFIG/config.json or ~/.docker/config.json), as docker login and
oras login write them. With --device npu, a package built for another target
than this machine's NPU is refused before it is downloaded.`,
		Example:       `  xdnarun pull localhost:5000/models/stories:q4_0`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			s, err := registry.OpenStore()
			if err != nil {
				return err
			}
			m, err := o.pull(cmd.Context(), s, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", m.Ref, m.Digest, m.Path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.plainHTTP, "plain-http", false, "plain HTTP to a registry that is not on loopback")
	cmd.Flags().StringVar(&o.device, "device", "auto", "where the model will run: with npu, refuse a package for another target than this machine's NPU")
	return cmd
}

type listEntry struct {
	Ref          string `json:"ref"`
	Digest       string `json:"digest"`
	Size         int64  `json:"size"` // of the compressed layer
	Target       string `json:"target"`
	Arch         string `json:"arch"`
	Quantisation string `json:"quantisation"`
	Parameters   int64  `json:"parameters"`
	Path         string `json:"path"`
}

func newListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:           "list",
		Short:         "List the models in the local store",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := registry.OpenStore()
			if err != nil {
				return err
			}
			models, errs := s.List()
			for _, err := range errs {
				fmt.Fprintln(cmd.ErrOrStderr(), "xdnarun: list:", err)
			}
			out := []listEntry{}
			for _, m := range models {
				a := m.Annotations
				p, _ := strconv.ParseInt(a[registry.AnnotationParameters], 10, 64)
				out = append(out, listEntry{m.Ref, m.Digest.String(), m.Layer.Size, a[registry.AnnotationTarget], a[registry.AnnotationArch], a[registry.AnnotationQuantisation], p, m.Path})
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REF\tDIGEST\tSIZE\tTARGET\tARCH\tQUANT\tPARAMS")
			for _, e := range out {
				fmt.Fprintf(tw, "%s\t%s\t%.1f MiB\t%s\t%s\t%s\t%s\n", e.Ref, e.Digest[:19], float64(e.Size)/(1<<20), e.Target, e.Arch, e.Quantisation, humanCount(e.Parameters))
			}
			tw.Flush()
			if len(errs) > 0 {
				return fmt.Errorf("%d entries of the store could not be read", len(errs))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

func newRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:           "rm REF...",
		Short:         "Remove models from the local store (and the blobs no other model uses)",
		Args:          cobra.MinimumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := registry.OpenStore()
			if err != nil {
				return err
			}
			for _, ref := range args {
				if err := s.Remove(ref); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", ref)
			}
			return nil
		},
	}
}

// addServeCommands registers serve, pull, list and rm on the root command,
// and lets its MODEL argument be a reference, pulled on first use.
func addServeCommands(root *cobra.Command) {
	root.AddCommand(newServeCmd(), newPullCmd(), newListCmd(), newRmCmd())
	po := &pullOptions{}
	root.Flags().BoolVar(&po.plainHTTP, "plain-http", false, "pull a REF over plain HTTP (loopback registries need no flag)")
	run := root.RunE
	root.RunE = func(cmd *cobra.Command, args []string) error {
		po.stderr = cmd.ErrOrStderr()
		if f := cmd.Flags().Lookup("device"); f != nil {
			po.device = f.Value.String()
		}
		if len(args) == 1 {
			p, err := resolveModel(cmd.Context(), args[0], po)
			if err != nil {
				return err
			}
			args = []string{p}
		} else if f := cmd.Flags().Lookup("model"); f != nil && f.Value.String() != "" {
			p, err := resolveModel(cmd.Context(), f.Value.String(), po)
			if err != nil {
				return err
			}
			f.Value.Set(p)
		}
		return run(cmd, args)
	}
}
