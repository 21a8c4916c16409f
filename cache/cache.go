// Package cache names the files xdna keeps between runs: GGUF models packed
// on first use and .xdna.zst packages unpacked on first use. The root is
// $XDG_CACHE_HOME/xdna, else $HOME/.cache/xdna.
//
//	<root>/gguf/<key of the GGUF file>-<target>.xdna
//	<root>/zst/<key of the .zst file>.xdna
//	<root>/calibration/<target>-<device>.json  (xdnarun calibrate)
//	<root>/keys/<device>-<inode>.json  (the key of a file hashed before: FileKey)
//
// Every file is written to a temporary file in its directory and renamed
// into place, so a name that exists is complete.
package cache

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/xdna-go/xdna/internal/blake3"
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

// Key returns the key of a file whose content r reads, under which the
// cache keeps what it makes from it: the BLAKE3-256 of the content in 64
// lowercase hex digits. Each run of a GGUF or .zst file hashes the whole
// file to find its entry, and BLAKE3 on one core hashes two to four times
// what SHA-256 with SHA-NI does (the key before it: entries made then are
// not found, and are made again once): internal/blake3 at 5.3-6.5 GB/s
// with AVX-512 on the development VM, zeebo/blake3's AVX2 code (which it
// uses without AVX-512) at 2.7-3.2.
func Key(r io.Reader) (string, error) {
	h := blake3.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// GGUFPack returns the path of the pack of the GGUF file whose key (Key) is
// key, for target.
func GGUFPack(key, target string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if target != "xdna1" && target != "xdna2" {
		return "", fmt.Errorf("cache: target %q: want xdna1 or xdna2", target)
	}
	return path("gguf", key+"-"+target+".xdna")
}

// Unpacked returns the path of the unpacked form of the .xdna.zst file whose
// key (Key) is key.
func Unpacked(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return path("zst", key+".xdna")
}

func path(dir, name string) (string, error) {
	r, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(r, dir, name), nil
}

func checkKey(key string) error {
	if len(key) != 64 {
		return fmt.Errorf("cache: key %q: want 64 hex digits", key)
	}
	for _, c := range key {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("cache: key %q: want 64 lowercase hex digits", key)
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
