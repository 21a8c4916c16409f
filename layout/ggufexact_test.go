package layout

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// openFullParse is OpenGGUF as it was before the parser skipped the
// arrays: every array from the parser (convertValue), the strings from the
// file.
func openFullParse(t *testing.T, path string) *GGUF {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	gf, err := parseGuarded(path, false)
	if err != nil {
		t.Fatal(err)
	}
	e, err := readGGUFExact(path)
	if err != nil {
		t.Fatal(err)
	}
	e.nested = true // take every array from the parser
	g, err := fromParsed(path, st.Size(), gf, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// rawGGUF encodes a GGUF v3 file of metadata only; each kv is a key, a
// type code and the value's bytes.
type rawKV struct {
	key string
	typ uint32
	val []byte
}

func rawGGUF(kvs []rawKV) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("GGUF")
	binary.Write(&b, le, uint32(3))
	binary.Write(&b, le, uint64(0))
	binary.Write(&b, le, uint64(len(kvs)))
	for _, kv := range kvs {
		binary.Write(&b, le, uint64(len(kv.key)))
		b.WriteString(kv.key)
		binary.Write(&b, le, kv.typ)
		b.Write(kv.val)
	}
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	return b.Bytes()
}

// array encodes an array of element type et holding the values vs (each
// written as the type's bytes).
func array(et uint32, vs ...any) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, et)
	binary.Write(&b, binary.LittleEndian, uint64(len(vs)))
	for _, v := range vs {
		switch x := v.(type) {
		case string:
			binary.Write(&b, binary.LittleEndian, uint64(len(x)))
			b.WriteString(x)
		case []byte:
			b.Write(x)
		default:
			binary.Write(&b, binary.LittleEndian, x)
		}
	}
	return b.Bytes()
}

// TestOpenGGUFArraysExact checks that OpenGGUF, whose parser skips the
// metadata arrays while readGGUFExact reads them, gives the metadata the
// full parse gives: on every fixture model and vocabulary, and on a file
// with an array of every element type (signed, unsigned, 64-bit extremes,
// bools other than 0 and 1, f64, NaN), and on one with an array of arrays
// (parsed again whole). An unsigned 64-bit element above MaxInt64 is an
// error either way.
func TestOpenGGUFArraysExact(t *testing.T) {
	var paths []string
	for _, pat := range []string{"../../shared/fixtures/models/*.gguf", "../../shared/fixtures/vocab/*.gguf"} {
		m, _ := filepath.Glob(pat)
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		t.Log("no fixtures found under ../../shared/fixtures: only the generated files are checked")
	}
	dir := t.TempDir()
	all := filepath.Join(dir, "arrays.gguf")
	nan := math.Float32bits(float32(math.NaN())) | 1
	kvs := []rawKV{
		{"general.architecture", 8, append(binary.LittleEndian.AppendUint64(nil, 5), "llama"...)},
		{"a.u8", 9, array(0, uint8(0), uint8(255))},
		{"a.i8", 9, array(1, int8(-128), int8(127))},
		{"a.u16", 9, array(2, uint16(65535), uint16(1))},
		{"a.i16", 9, array(3, int16(-32768), int16(2))},
		{"a.u32", 9, array(4, uint32(math.MaxUint32), uint32(3))},
		{"a.i32", 9, array(5, int32(math.MinInt32), int32(-1))},
		{"a.f32", 9, array(6, float32(-0.5), math.Float32frombits(nan), float32(math.Inf(1)))},
		{"a.bool", 9, array(7, uint8(0), uint8(1), uint8(2))},
		{"a.u64", 9, array(10, uint64(math.MaxInt64), uint64(0))},
		{"a.i64", 9, array(11, int64(math.MinInt64), int64(7))},
		{"a.f64", 9, array(12, 1.0/3, -2.5)},
		{"a.str", 9, array(8, "  ", "x", "")},
		{"a.empty", 9, array(6)},
	}
	if err := os.WriteFile(all, rawGGUF(kvs), 0o644); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "nested.gguf")
	inner := array(5, int32(4), int32(5))
	if err := os.WriteFile(nested, rawGGUF(append(kvs[:3:3], rawKV{"a.nested", 9, array(9, inner, inner)})), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(paths, all, nested) {
		g, err := OpenGGUF(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want := openFullParse(t, p)
		if len(g.KV) != len(want.KV) {
			t.Fatalf("%s: %d keys, want %d", p, len(g.KV), len(want.KV))
		}
		for i, kv := range g.KV {
			w := want.KV[i]
			// NaN != NaN: compare the formatted values, as the content digest does.
			if kv.Key != w.Key || !reflect.DeepEqual(kv.Value, w.Value) && fmtValue(kv.Value) != fmtValue(w.Value) {
				t.Fatalf("%s: %q = %T %v, want %T %v", p, kv.Key, kv.Value, trim(kv.Value), w.Value, trim(w.Value))
			}
		}
		if !reflect.DeepEqual(g.Tensors, want.Tensors) {
			t.Fatalf("%s: tensors differ", p)
		}
	}
	if g, _ := OpenGGUF(all); g != nil {
		if v, _ := g.Get("a.bool"); !reflect.DeepEqual(v, []int64{0, 1, 1}) {
			t.Errorf("a.bool = %v, want [0 1 1]", v)
		}
		if v, _ := g.Get("a.u32"); !reflect.DeepEqual(v, []int64{math.MaxUint32, 3}) {
			t.Errorf("a.u32 = %v", v)
		}
	}
	big := filepath.Join(dir, "big.gguf")
	os.WriteFile(big, rawGGUF([]rawKV{kvs[0], {"a.u64", 9, array(10, uint64(math.MaxInt64)+1)}}), 0o644)
	if _, err := OpenGGUF(big); err == nil {
		t.Errorf("an unsigned element above MaxInt64: no error")
	}
}

func fmtValue(v any) string { return fmt.Sprintf("%T:%v", v, v) }

// trim shortens long arrays for messages.
func trim(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Len() > 8 {
		return rv.Slice(0, 8).Interface()
	}
	return v
}
