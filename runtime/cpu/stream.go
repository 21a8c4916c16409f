package cpu

import "sync"

// SumStream reads buf once, split into threads contiguous parts each summed
// by its own goroutine, and returns the sum: the streaming-read loop that
// `xdnarun bench` and BenchmarkStreamRead time to measure the machine's
// memory bandwidth.
func SumStream(buf []uint64, threads int) uint64 {
	threads = max(threads, 1)
	var wg sync.WaitGroup
	sums := make([]uint64, threads)
	chunk := len(buf) / threads
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int, part []uint64) {
			defer wg.Done()
			sums[t] = sumStream(part)
		}(t, buf[t*chunk:(t+1)*chunk])
	}
	wg.Wait()
	var s uint64
	for _, x := range sums {
		s += x
	}
	return s
}

// sumStream returns the sum of part (wrapping). With the assembly kernels
// the multiples of 64 words are read with vector loads prefetching ahead
// (sumStreamAVX2), so that the yardstick of the kernels' weight bandwidth
// is the fastest read of memory this machine does, not a slower loop; the
// rest, or everything without them, is summed in Go.
func sumStream(part []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	if n := len(part) &^ 63; asmOn() && n > 0 {
		s0 = sumStreamAVX2(&part[0], n)
		part = part[n:]
	}
	i := 0
	for ; i+4 <= len(part); i += 4 {
		s0 += part[i]
		s1 += part[i+1]
		s2 += part[i+2]
		s3 += part[i+3]
	}
	for ; i < len(part); i++ {
		s0 += part[i]
	}
	return s0 + s1 + s2 + s3
}
