package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/runtime/npu/device"
	"github.com/xdna-go/xdna/runtime/npu/probe"
)

func newProbeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "probe [--json]",
		Short: "Look for an AMD XDNA NPU and print what the driver reports",
		Long: `probe opens /dev/accel/accel* and asks the amdxdna driver (DRM_IOCTL_AMDXDNA_GET_INFO)
for the AIE array (columns, rows, version) and the firmware version. Pure Go: it needs
no XRT. Without a device it says so and exits 1.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			infos, err := probe.Probe()
			if err != nil {
				if asJSON { // still JSON for a program: no device
					fmt.Fprintln(cmd.OutOrStdout(), "[]")
				}
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(infos)
			}
			for i := range infos {
				in := &infos[i]
				fmt.Fprintf(cmd.OutOrStdout(), "%s; target %s\n", in.String(), in.Target())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "--device npu would run through %s\n", device.NPUPath())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
