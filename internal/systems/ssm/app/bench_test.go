package app

import "testing"

// What a session's value costs to build (the front end, on every POST) and
// to check (the front end on a POST's old value, the session driver on
// every answer), at the paper's 8 KB.
func BenchmarkNewSession8K(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(8192)
	for b.Loop() {
		NewSession("user-17", 42, 8192)
	}
}

func BenchmarkParseSession8K(b *testing.B) {
	v := NewSession("user-17", 42, 8192)
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if _, err := ParseSession(v); err != nil {
			b.Fatal(err)
		}
	}
}
