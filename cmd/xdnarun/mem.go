package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// availableMemory returns the bytes this process can still allocate and
// where the figure comes from: the smaller of /proc/meminfo's MemAvailable
// plus SwapFree and the cgroup's memory.max less memory.current. It returns
// 0 when neither can be read.
func availableMemory() (int64, string) {
	var avail int64
	src := ""
	if f, err := os.Open("/proc/meminfo"); err == nil {
		kb := map[string]int64{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				kb[k] = n
			}
		}
		f.Close()
		if a, ok := kb["MemAvailable"]; ok {
			avail, src = (a+kb["SwapFree"])*1024, "the machine (MemAvailable + SwapFree)"
		}
	}
	max, err1 := os.ReadFile("/sys/fs/cgroup/memory.max")
	cur, err2 := os.ReadFile("/sys/fs/cgroup/memory.current")
	if err1 == nil && err2 == nil {
		m, e1 := strconv.ParseInt(strings.TrimSpace(string(max)), 10, 64) // "max": no limit
		c, e2 := strconv.ParseInt(strings.TrimSpace(string(cur)), 10, 64)
		if e1 == nil && e2 == nil && m > c && (avail == 0 || m-c < avail) {
			avail, src = m-c, "the cgroup (memory.max - memory.current)"
		}
	}
	return avail, src
}
