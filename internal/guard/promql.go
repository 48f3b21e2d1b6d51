package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrQuery wraps every error of Query and DecodeQuery.
var ErrQuery = errors.New("guard: PromQL query")

// Query runs an instant PromQL query against the Prometheus server at base
// (its /api/v1/query) and returns its value: the scalar, or the largest
// sample of the vector. An empty vector is NaN (nothing to compare: the
// rule does not hold).
func Query(ctx context.Context, client *http.Client, base, query string, timeout time.Duration) (float64, error) {
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := strings.TrimRight(base, "/") + "/api/v1/query?query=" + url.QueryEscape(query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrQuery, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrQuery, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrQuery, err)
	}
	return DecodeQuery(body)
}

// DecodeQuery reads the JSON answer of /api/v1/query.
func DecodeQuery(body []byte) (float64, error) {
	var ans struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return 0, fmt.Errorf("%w: the answer is not Prometheus's JSON: %v", ErrQuery, err)
	}
	if ans.Status != "success" {
		return 0, fmt.Errorf("%w: status %q: %s %s", ErrQuery, ans.Status, ans.ErrorType, ans.Error)
	}
	switch ans.Data.ResultType {
	case "scalar":
		var pair []any
		if err := json.Unmarshal(ans.Data.Result, &pair); err != nil {
			return 0, fmt.Errorf("%w: scalar result: %v", ErrQuery, err)
		}
		return sampleValue(pair)
	case "vector":
		var vec []struct {
			Value []any `json:"value"`
		}
		if err := json.Unmarshal(ans.Data.Result, &vec); err != nil {
			return 0, fmt.Errorf("%w: vector result: %v", ErrQuery, err)
		}
		best := math.NaN()
		for _, s := range vec {
			v, err := sampleValue(s.Value)
			if err != nil {
				return 0, err
			}
			if math.IsNaN(best) || v > best {
				best = v
			}
		}
		return best, nil
	}
	return 0, fmt.Errorf("%w: result type %q: want a scalar or an instant vector (wrap a range in rate() or max_over_time())", ErrQuery, ans.Data.ResultType)
}

// sampleValue reads [timestamp, "value"].
func sampleValue(pair []any) (float64, error) {
	if len(pair) != 2 {
		return 0, fmt.Errorf("%w: a sample is [time, \"value\"], got %d elements", ErrQuery, len(pair))
	}
	s, ok := pair[1].(string)
	if !ok {
		return 0, fmt.Errorf("%w: a sample's value is a string, got %T", ErrQuery, pair[1])
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: sample value %q: %v", ErrQuery, s, err)
	}
	return v, nil
}
