package cache

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestPaths(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	t.Setenv("HOME", "/home/u")
	if r, _ := Root(); r != "/x/cache/xdna" {
		t.Errorf("Root = %s", r)
	}
	if p, _ := GGUFPack(sha, "xdna1"); p != filepath.Join("/x/cache/xdna/gguf", sha+"-xdna1.xdna") {
		t.Errorf("GGUFPack = %s", p)
	}
	if p, _ := Unpacked(sha); p != filepath.Join("/x/cache/xdna/zst", sha+".xdna") {
		t.Errorf("Unpacked = %s", p)
	}
	t.Setenv("XDG_CACHE_HOME", "rel")
	if r, _ := Root(); r != "/home/u/.cache/xdna" {
		t.Errorf("Root with a relative XDG_CACHE_HOME = %s", r)
	}
	t.Setenv("HOME", "")
	if _, err := Root(); err == nil {
		t.Error("Root without HOME: no error")
	}
	t.Setenv("XDG_CACHE_HOME", "/x")
	for _, bad := range []string{"", "../../etc/passwd", strings.Repeat("AB", 32)} {
		if _, err := Unpacked(bad); err == nil {
			t.Errorf("Unpacked(%q): no error", bad)
		}
	}
	if _, err := GGUFPack(sha, "../x"); err == nil {
		t.Error("GGUFPack with a bad target: no error")
	}
}
