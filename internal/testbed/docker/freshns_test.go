package docker

import (
	"errors"
	"testing"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// nsSite is a kernelSite whose node 1 has the namespaces of seq in turn,
// "" meaning down, one per lookup (the last one stays).
type nsSite struct {
	kernelSite
	seq []string
}

func (s *nsSite) nsOf(int) (string, string, error) {
	ns := s.seq[0]
	if len(s.seq) > 1 {
		s.seq = s.seq[1:]
	}
	if ns == "" {
		return "", "", errors.New("node 1 is down")
	}
	return ns, "c1", nil
}

// A fault whose namespace went away under it (the container restarted) is
// applied again in the new one; an error in a namespace that stayed is
// returned at once, without a retry.
func TestFreshNSRetriesOnlyWhenTheNamespaceChanged(t *testing.T) {
	fail := errors.New("nsenter: cannot open /proc/10/ns/net")
	site := &nsSite{seq: []string{"/proc/10/ns/net", "", "/proc/20/ns/net"}}
	var tries []string
	undo, err := freshNS(site, 1, func() (string, kernelfault.Undo, error) {
		ns, _, _ := site.nsOf(1)
		tries = append(tries, ns)
		if ns == "/proc/10/ns/net" {
			return ns, nil, fail
		}
		return ns, func() error { return nil }, nil
	})
	if err != nil || undo == nil {
		t.Fatalf("freshNS = %v: want it applied in the new namespace", err)
	}
	if len(tries) != 2 || tries[1] != "/proc/20/ns/net" {
		t.Errorf("applied in %v: want the old namespace, then the new one", tries)
	}

	site = &nsSite{seq: []string{"/proc/30/ns/net"}}
	n := 0
	_, err = freshNS(site, 1, func() (string, kernelfault.Undo, error) { n++; return "/proc/30/ns/net", nil, fail })
	if !errors.Is(err, fail) || n != 1 {
		t.Errorf("same namespace: %d tries, err %v: want 1 try and the error", n, err)
	}
}
