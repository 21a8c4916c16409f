package main

import "github.com/klauspost/compress/zstd"

func zstdLevel(l int) (zstd.EncoderLevel, error) {
	switch l {
	case 1:
		return zstd.SpeedFastest, nil
	case 2:
		return zstd.SpeedDefault, nil
	case 3:
		return zstd.SpeedBetterCompression, nil
	case 4:
		return zstd.SpeedBestCompression, nil
	}
	return 0, errLevel
}
