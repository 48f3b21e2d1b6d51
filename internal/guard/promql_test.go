package guard

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDecodeQuery(t *testing.T) {
	for _, c := range []struct {
		body string
		want float64
	}{
		{`{"status":"success","data":{"resultType":"scalar","result":[1700000000.1,"0.25"]}}`, 0.25},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1,"3"]},{"metric":{},"value":[1,"7.5"]}]}}`, 7.5},
		{`{"status":"success","data":{"resultType":"vector","result":[]}}`, math.NaN()},
	} {
		got, err := DecodeQuery([]byte(c.body))
		if err != nil || !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("DecodeQuery(%s) = %v, %v; want %v", c.body, got, err, c.want)
		}
	}
	for _, c := range []struct{ body, says string }{
		{`<html>`, "not Prometheus's JSON"},
		{`{"status":"error","errorType":"bad_data","error":"parse error"}`, "bad_data parse error"},
		{`{"status":"success","data":{"resultType":"matrix","result":[]}}`, "want a scalar or an instant vector"},
		{`{"status":"success","data":{"resultType":"scalar","result":[1]}}`, "got 1 elements"},
		{`{"status":"success","data":{"resultType":"scalar","result":[1,2]}}`, "is a string"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"x"]}]}}`, `sample value "x"`},
	} {
		_, err := DecodeQuery([]byte(c.body))
		if err == nil || !errors.Is(err, ErrQuery) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("DecodeQuery(%s) = %v; want an ErrQuery saying %q", c.body, err, c.says)
		}
	}
}

func FuzzDecodeQuery(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"0.25"]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"7.5"]}]}}`))
	f.Add([]byte(`{"status":"error","error":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeQuery(b) // must not panic
	})
}
