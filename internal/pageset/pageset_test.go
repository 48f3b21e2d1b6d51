package pageset

import (
	"bytes"
	"testing"
)

func TestBodyDeterministicAndVerifies(t *testing.T) {
	for _, size := range []int{0, 10, 100, 26 * 1024} {
		for _, i := range []int{0, 1, 17, 17999} {
			b := Body(i, size)
			if !bytes.Equal(b, Body(i, size)) {
				t.Fatalf("page %d size %d not deterministic", i, size)
			}
			if len(b) != Size(i, size) {
				t.Fatalf("page %d size %d: len %d, want %d", i, size, len(b), Size(i, size))
			}
			if !Verify(Path(i), b) {
				t.Fatalf("page %d size %d does not verify", i, size)
			}
		}
	}
}

func TestVerifyRejectsDamage(t *testing.T) {
	b := Body(5, 4096)
	flipped := bytes.Clone(b)
	flipped[3000] ^= 1
	cases := map[string]struct {
		path string
		body []byte
	}{
		"wrong page": {Path(6), b},
		"truncated":  {Path(5), b[:len(b)-1]},
		"padded":     {Path(5), append(bytes.Clone(b), 'x')},
		"bit flip":   {Path(5), flipped},
		"empty":      {Path(5), nil},
		"not a page": {"/index.html", b},
	}
	for name, c := range cases {
		if Verify(c.path, c.body) {
			t.Errorf("%s: verified", name)
		}
	}
	if !Verify(Path(5)+"?x=1", b) {
		t.Error("query string should be ignored")
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("/p/3", Body(3, 64))
	f.Add("/p/03", []byte("<!-- faultbench page 3 size 64 -->\n"))
	f.Fuzz(func(t *testing.T, path string, body []byte) {
		if Verify(path, body) {
			i, _ := ParsePath(path)
			if !bytes.HasPrefix(body, []byte(header(i, 0)[:len("<!-- faultbench page ")])) {
				t.Fatal("verified a body without header")
			}
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 32*1024)
	b.SetBytes(26 * 1024)
	for i := 0; b.Loop(); i++ {
		buf = Append(buf[:0], i%18000, 26*1024)
	}
}

func BenchmarkVerify(b *testing.B) {
	page := Body(17, 26*1024)
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if !Verify("/p/17", page) {
			b.Fatal("does not verify")
		}
	}
}
