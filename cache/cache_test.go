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

// TestKey: the key is BLAKE3-256 in lowercase hex (the empty input's is
// the one the BLAKE3 specification's test vectors give), and one byte more
// or changed gives another.
func TestKey(t *testing.T) {
	if k, err := Key(strings.NewReader("")); err != nil || k != "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262" {
		t.Errorf("Key of nothing = %s, %v", k, err)
	}
	a, _ := Key(strings.NewReader("GGUF model"))
	b, _ := Key(strings.NewReader("GGUF model "))
	c, _ := Key(strings.NewReader("GGUF mode1"))
	if a == b || a == c || b == c || checkKey(a) != nil {
		t.Errorf("keys %s %s %s", a, b, c)
	}
}
