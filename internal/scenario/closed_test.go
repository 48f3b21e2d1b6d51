package scenario

import (
	"strings"
	"testing"
)

func TestClosedLoopWorkload(t *testing.T) {
	const head = "cluster: {system: static, nodes: 1}\nphases: [{name: a, duration: 10s}]\n"
	ok := head + "workload: {model: closed, users: 4, think: exponential(8ms), trace: \"zipf:10:1.0\"}\n"
	sc, err := Parse([]byte(ok), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload.Model != "closed" || sc.Workload.Users != 4 || sc.Workload.Think != "exponential(8ms)" {
		t.Fatalf("workload %+v", sc.Workload)
	}
	if sc.Scaled(0.1).Workload.Think != "exponential(8ms)" {
		t.Fatalf("think was scaled")
	}
	for body, want := range map[string]string{
		head + "workload: {model: closed, rate: 10, trace: \"zipf:10:1.0\"}\n":                      "c.yaml:3: workload.rate: closed-loop users set their own rate",
		head + "workload: {model: closed, think: \"gaussian(1ms, 1ms)\", trace: \"zipf:10:1.0\"}\n": "workload.think: \"gaussian(1ms, 1ms)\"",
		head + "workload: {model: shut, rate: 10, trace: \"zipf:10:1.0\"}\n":                        "unknown model \"shut\"",
		head + "workload: {rate: 10, think: 0, trace: \"zipf:10:1.0\"}\n":                           "add model: closed",
	} {
		if _, err := Parse([]byte(body), "c.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want …%s…", body, err, want)
		}
	}
}
