package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/registry"
)

func newPushCmd() *cobra.Command {
	var o registry.Options
	cmd := &cobra.Command{
		Use:   "push MODEL.xdna REGISTRY/REPO:TAG",
		Short: "Upload a package to an OCI registry as an xdna model artifact",
		Long: `push verifies the package, compresses it to the zstd distribution form (unless
it is already), and uploads it as an OCI artifact of type ` + registry.ArtifactType + `
with one layer of type ` + registry.LayerMediaType + ` and the package's facts as
annotations (architecture, target, parameter count, quantisation, source GGUF).
Registries on localhost or 127.0.0.1 are reached over plain HTTP; any other
over HTTPS unless --plain-http. Credentials come from the docker config, as
docker login and oras login write them. Pull it with xdnarun pull REF.`,
		Example:       `  xdnapack push model.xdna localhost:5000/models/stories:q4_0`,
		Args:          cobra.ExactArgs(2),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			p := cli.NewProgress(cmd.ErrOrStderr(), "push "+args[1])
			o.Progress = func(done, total int64) { p.Update(done, total, "") }
			man, err := registry.Push(cmd.Context(), args[0], args[1], o)
			p.Done()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s %s\n", args[1], man.Digest)
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.PlainHTTP, "plain-http", false, "plain HTTP to a registry that is not on loopback")
	return cmd
}
