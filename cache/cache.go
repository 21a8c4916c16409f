// Package cache names the files xdna keeps between runs: GGUF models packed
// on first use and .xdna.zst packages unpacked on first use. The root is
// $XDG_CACHE_HOME/xdna, else $HOME/.cache/xdna.
//
//	<root>/gguf/<sha256 of the GGUF file>-<target>.xdna
//	<root>/zst/<sha256 of the .zst file>.xdna
//	<root>/calibration/<target>-<device>.json  (xdnarun calibrate)
//
// Every file is written to a temporary file in its directory and renamed
// into place, so a name that exists is complete.
package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Root returns the cache root: $XDG_CACHE_HOME/xdna, else $HOME/.cache/xdna.
// A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
func Root() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "xdna"), nil
	}
	home := os.Getenv("HOME")
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("cache: neither XDG_CACHE_HOME nor HOME is an absolute path")
	}
	return filepath.Join(home, ".cache", "xdna"), nil
}

// GGUFPack returns the path of the pack of the GGUF file whose content has
// the sha256 sha (64 hex digits), for target.
func GGUFPack(sha, target string) (string, error) {
	if err := checkSHA(sha); err != nil {
		return "", err
	}
	if target != "xdna1" && target != "xdna2" {
		return "", fmt.Errorf("cache: target %q: want xdna1 or xdna2", target)
	}
	return path("gguf", sha+"-"+target+".xdna")
}

// Unpacked returns the path of the unpacked form of the .xdna.zst file whose
// content has the sha256 sha.
func Unpacked(sha string) (string, error) {
	if err := checkSHA(sha); err != nil {
		return "", err
	}
	return path("zst", sha+".xdna")
}

func path(dir, name string) (string, error) {
	r, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(r, dir, name), nil
}

func checkSHA(sha string) error {
	if len(sha) != 64 {
		return fmt.Errorf("cache: sha256 %q: want 64 hex digits", sha)
	}
	for _, c := range sha {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("cache: sha256 %q: want 64 lowercase hex digits", sha)
		}
	}
	return nil
}

// Calibration returns the path of the calibration file `xdnarun calibrate`
// writes for target, measured on device (npu, emu or sim):
// <root>/calibration/<target>-<device>.json.
func Calibration(target, device string) (string, error) {
	if target != "xdna1" && target != "xdna2" {
		return "", fmt.Errorf("cache: target %q: want xdna1 or xdna2", target)
	}
	switch device {
	case "npu", "emu", "sim":
	default:
		return "", fmt.Errorf("cache: device %q: want npu, emu or sim", device)
	}
	return path("calibration", target+"-"+device+".json")
}
