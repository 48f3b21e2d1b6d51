package array

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// fixture is an array over memory disks with a fake clock and an event log.
type fixture struct {
	*Array
	mem    map[*disk.Disk]*disk.Memory
	clock  time.Time
	mu     sync.Mutex
	events []Event
}

func testConfig() Config {
	c := DefaultConfig()
	c.ChunkSize = 2 * BlockSize
	c.DiskSize = 16 * int64(c.ChunkSize)
	return c
}

func newFixture(t testing.TB, cfg Config, timeout time.Duration) *fixture {
	t.Helper()
	f := &fixture{mem: map[*disk.Disk]*disk.Memory{}, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg.Now = func() time.Time { return f.clock }
	cfg.OnEvent = func(e Event) { f.mu.Lock(); f.events = append(f.events, e); f.mu.Unlock() }
	a, err := New(cfg, func(n int, size int64) (*disk.Disk, error) {
		m := disk.NewMemory(size)
		d, err := disk.New(m, disk.Config{Name: fmt.Sprint(n), Size: size, Timeout: timeout})
		f.mem[d] = m
		return d, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	f.Array = a
	return f
}

func (f *fixture) memOf(bayN int) []byte {
	f.Array.mu.Lock()
	defer f.Array.mu.Unlock()
	return f.mem[f.bays[bayN-1].disk].Bytes()
}

func (f *fixture) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Kind)
	}
	return out
}

func (f *fixture) has(kind string) bool {
	for _, k := range f.kinds() {
		if k == kind {
			return true
		}
	}
	return false
}

// rebuildAll steps the reconstruction to its end.
func (f *fixture) rebuildAll(t testing.TB) {
	t.Helper()
	for i := 0; f.Rebuilding(); i++ {
		if i > 10000 {
			t.Fatal("rebuild does not finish")
		}
		f.Step(int64(f.chunk))
	}
}

func fill(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestLeftSymmetricLayout(t *testing.T) {
	f := newFixture(t, testConfig(), 0)
	want := []struct {
		parity int
		data   []int
	}{
		{3, []int{0, 1, 2}}, {2, []int{3, 0, 1}}, {1, []int{2, 3, 0}}, {0, []int{1, 2, 3}}, {3, []int{0, 1, 2}},
	}
	for s, w := range want {
		if p := f.parityRole(int64(s)); p != w.parity {
			t.Fatalf("stripe %d: parity on %d, want %d", s, p, w.parity)
		}
		for d, r := range w.data {
			if got := f.dataRole(int64(s), d); got != r {
				t.Fatalf("stripe %d chunk %d on %d, want %d", s, d, got, r)
			}
		}
	}
}

// TestAnyDiskRecomputedFromOthers: after random writes, every member's
// content is the XOR of the others' (parity invariant), for every disk.
func TestAnyDiskRecomputedFromOthers(t *testing.T) {
	for _, n := range []int{3, 4, 5, 7} {
		cfg := testConfig()
		cfg.Disks = n
		f := newFixture(t, cfg, 0)
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		for i := 0; i < 200; i++ {
			blocks := f.Size() / BlockSize
			off := rng.Int64N(blocks) * BlockSize
			l := min(int64(1+rng.IntN(9)), blocks-off/BlockSize) * BlockSize
			if err := f.WriteAt(fill(rng, int(l)), off); err != nil {
				t.Fatal(err)
			}
		}
		for victim := 1; victim <= n; victim++ {
			x := make([]byte, f.diskLen)
			for other := 1; other <= n; other++ {
				if other != victim {
					subtle.XORBytes(x, x, f.memOf(other)[:f.diskLen])
				}
			}
			if !bytes.Equal(x, f.memOf(victim)[:f.diskLen]) {
				t.Fatalf("n=%d: disk %d differs from the XOR of the others", n, victim)
			}
		}
	}
}

// model is the reference: the bytes each block may hold. A failed write
// leaves a block holding either its old or its new content.
type model struct {
	blocks [][][]byte // per block, the allowed contents
}

func newModel(size int64) *model {
	m := &model{blocks: make([][][]byte, size/BlockSize)}
	for i := range m.blocks {
		m.blocks[i] = [][]byte{make([]byte, BlockSize)}
	}
	return m
}

func (m *model) write(p []byte, off int64, ok bool) {
	for i := 0; i*BlockSize < len(p); i++ {
		b := &m.blocks[off/BlockSize+int64(i)]
		nb := bytes.Clone(p[i*BlockSize : (i+1)*BlockSize])
		if ok {
			*b = [][]byte{nb}
		} else {
			*b = append(*b, nb)
		}
	}
}

func (m *model) check(t *testing.T, p []byte, off int64, what string) {
	t.Helper()
	for i := 0; i*BlockSize < len(p); i++ {
		got := p[i*BlockSize : (i+1)*BlockSize]
		okAny := false
		for _, c := range m.blocks[off/BlockSize+int64(i)] {
			okAny = okAny || bytes.Equal(got, c)
		}
		if !okAny {
			t.Fatalf("%s: block %d returned wrong bytes", what, off/BlockSize+int64(i))
		}
	}
}

// TestRandomOpsAgainstModel: seeded random reads and writes, with a member
// failing, being rebuilt in steps interleaved with I/O, and replaced, give
// exactly the model's bytes.
func TestRandomOpsAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		f := newFixture(t, testConfig(), 0)
		m := newModel(f.Size())
		rng := rand.New(rand.NewPCG(seed, 7))
		blocks := f.Size() / BlockSize
		for i := 0; i < 600; i++ {
			off := rng.Int64N(blocks) * BlockSize
			l := min(int64(1+rng.IntN(12)), blocks-off/BlockSize) * BlockSize
			switch {
			case i == 150:
				if _, err := f.Inject(1+rng.IntN(4), disk.Remove, disk.Sticky); err != nil {
					t.Fatal(err)
				}
			case i > 150 && i%5 == 0:
				f.Step(int64(f.chunk))
			case rng.IntN(2) == 0:
				p := fill(rng, int(l))
				if err := f.WriteAt(p, off); err != nil {
					t.Fatalf("seed %d op %d: write: %v", seed, i, err)
				}
				m.write(p, off, true)
			default:
				p := make([]byte, l)
				if err := f.ReadAt(p, off); err != nil {
					t.Fatalf("seed %d op %d: read: %v", seed, i, err)
				}
				m.check(t, p, off, fmt.Sprintf("seed %d op %d", seed, i))
			}
		}
		f.rebuildAll(t)
		if st := f.Status(); st.State != "optimal" || st.Redundancy != 1 {
			t.Fatalf("seed %d: after rebuild: %s redundancy %d", seed, st.State, st.Redundancy)
		}
		all := make([]byte, f.Size())
		if err := f.ReadAt(all, 0); err != nil {
			t.Fatal(err)
		}
		m.check(t, all, 0, "final")
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, testConfig(), 0)
	if err := f.ReadAt(make([]byte, BlockSize), f.Size()); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
	if err := f.WriteAt(make([]byte, 2*BlockSize), f.Size()-BlockSize); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("write across end: %v", err)
	}
	if err := f.ReadAt(make([]byte, 100), 0); !errors.Is(err, ErrUnaligned) {
		t.Fatalf("unaligned: %v", err)
	}
	if err := f.ReadAt(make([]byte, BlockSize), -BlockSize); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("negative: %v", err)
	}
	if _, err := f.Inject(9, disk.Remove, disk.Sticky); !errors.Is(err, ErrNoDisk) {
		t.Fatalf("fault on disk 9: %v", err)
	}
	cfg := testConfig()
	cfg.Disks = 2
	if _, err := New(cfg, nil); err == nil {
		t.Fatal("2 disks accepted")
	}
}

func TestDoubleFailureRefusesUntilForced(t *testing.T) {
	cfg := testConfig()
	cfg.Spares = 0
	f := newFixture(t, cfg, 0)
	rng := rand.New(rand.NewPCG(3, 3))
	data := fill(rng, int(f.Size()))
	if err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	f.Inject(2, disk.Remove, disk.Sticky)
	// Degraded: still serves, and a write lands while disk 3 is still there.
	newer := fill(rng, 4*BlockSize)
	if err := f.WriteAt(newer, 0); err != nil {
		t.Fatal(err)
	}
	copy(data, newer)
	id3, _ := f.Inject(3, disk.Remove, disk.Sticky)
	if st := f.Status(); st.State != "failed" || st.Redundancy != 0 {
		t.Fatalf("after second removal: %+v", st)
	}
	if !f.has("volume.failed") {
		t.Fatalf("events %v", f.kinds())
	}
	p := make([]byte, BlockSize)
	if err := f.ReadAt(p, 0); !errors.Is(err, ErrFailed) {
		t.Fatalf("read on failed volume: %v", err)
	}
	if err := f.WriteAt(p, 0); !errors.Is(err, ErrFailed) {
		t.Fatalf("write on failed volume: %v", err)
	}
	if err := f.Force(); !errors.Is(err, ErrState) {
		t.Fatalf("force with both disks out: %v", err)
	}
	f.Revert(id3) // the operator puts the wrong disk back
	if err := f.ReadAt(p, 0); !errors.Is(err, ErrFailed) {
		t.Fatalf("reinsertion alone revived the volume: %v", err)
	}
	if err := f.Force(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, f.Size())
	if err := f.ReadAt(got, 0); err != nil {
		t.Fatalf("after force: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("wrong data after force")
	}
}

// TestForcedStaleDiskNeverServesOldBytes: after a double failure, the disk
// pulled first (which missed writes) is forced back with the one pulled
// second; blocks it missed fail their checksums, and where the other copy
// is gone too the read fails instead of returning stale bytes.
func TestForcedStaleDiskNeverServesOldBytes(t *testing.T) {
	cfg := testConfig()
	cfg.Spares = 0
	f := newFixture(t, cfg, 0)
	rng := rand.New(rand.NewPCG(4, 4))
	old := fill(rng, int(f.Size()))
	f.WriteAt(old, 0)
	id1, _ := f.Inject(1, disk.Remove, disk.Sticky)
	newer := fill(rng, int(f.Size()))
	if err := f.WriteAt(newer, 0); err != nil {
		t.Fatal(err)
	}
	id2, _ := f.Inject(2, disk.Remove, disk.Sticky)
	f.Revert(id1)
	f.Revert(id2)
	if err := f.Force(); err != nil {
		t.Fatal(err)
	}
	refused, served := 0, 0
	for off := int64(0); off < f.Size(); off += BlockSize {
		p := make([]byte, BlockSize)
		err := f.ReadAt(p, off)
		switch {
		case err == nil:
			served++
			if !bytes.Equal(p, newer[off:off+BlockSize]) {
				t.Fatalf("block %d: stale or wrong bytes served", off/BlockSize)
			}
		case errors.Is(err, ErrUnrecoverable) || errors.Is(err, ErrFailed):
			refused++
		default:
			t.Fatalf("block %d: %v", off/BlockSize, err)
		}
	}
	if served == 0 {
		t.Fatalf("nothing served after force (refused %d)", refused)
	}
}

func TestReconstructionOntoSpare(t *testing.T) {
	f := newFixture(t, testConfig(), 0)
	rng := rand.New(rand.NewPCG(5, 5))
	data := fill(rng, int(f.Size()))
	f.WriteAt(data, 0)
	f.Inject(3, disk.Remove, disk.Sticky)
	st := f.Status()
	if st.State != "reconstructing" || st.Rebuild == nil || st.Rebuild.Disk != 5 || st.Redundancy != 0 {
		t.Fatalf("status %+v", st)
	}
	n := f.Step(int64(f.chunk) * 4)
	if n != int64(f.chunk)*4 {
		t.Fatalf("step rebuilt %d bytes", n)
	}
	if p := f.Status().Rebuild.Progress; p != 0.25 {
		t.Fatalf("progress %v", p)
	}
	f.rebuildAll(t)
	st = f.Status()
	if st.State != "optimal" || st.Redundancy != 1 || st.Disks[4].State != "member" || st.Disks[2].State != "failed" {
		t.Fatalf("status %+v", st)
	}
	// The spare now holds exactly what the lost disk held.
	got := make([]byte, f.Size())
	f.ReadAt(got, 0)
	if !bytes.Equal(got, data) {
		t.Fatal("wrong data after rebuild")
	}
	want := []string{"disk.failed", "volume.degraded", "reconstruction.started", "reconstruction.finished", "volume.optimal"}
	for _, k := range want {
		if !f.has(k) {
			t.Fatalf("missing event %s in %v", k, f.kinds())
		}
	}
	// Replace the failed disk: it becomes the new spare.
	if err := f.ReplaceDisk(3); err != nil {
		t.Fatal(err)
	}
	if s := f.Status().Disks[2].State; s != "spare" {
		t.Fatalf("replaced disk is %s", s)
	}
}

func TestManualReconstruction(t *testing.T) {
	cfg := testConfig()
	cfg.Recon.Auto = false
	cfg.Spares = 0
	f := newFixture(t, cfg, 0)
	f.Inject(1, disk.Remove, disk.Sticky)
	if f.Rebuilding() {
		t.Fatal("manual policy started a rebuild")
	}
	if err := f.StartReconstruction(0); !errors.Is(err, ErrState) {
		t.Fatalf("no spare: %v", err)
	}
	n, err := f.AddSpare()
	if err != nil || n != 5 {
		t.Fatalf("add spare: %d %v", n, err)
	}
	if f.Rebuilding() {
		t.Fatal("manual policy started a rebuild on add-spare")
	}
	if err := f.StartReconstruction(n); err != nil {
		t.Fatal(err)
	}
	f.rebuildAll(t)
	if st := f.Status(); st.Redundancy != 1 {
		t.Fatalf("status %+v", st)
	}
	if err := f.StartReconstruction(0); !errors.Is(err, ErrState) {
		t.Fatalf("nothing to rebuild: %v", err)
	}
}

func TestSecondFailureDuringRebuildFails(t *testing.T) {
	f := newFixture(t, testConfig(), 0)
	f.Inject(1, disk.Remove, disk.Sticky)
	f.Step(int64(f.chunk))
	f.Inject(2, disk.Remove, disk.Sticky)
	if st := f.Status(); st.State != "failed" || st.Rebuild != nil {
		t.Fatalf("status %+v", st)
	}
	// Losing the rebuild target instead is survivable.
	g := newFixture(t, testConfig(), 0)
	g.Inject(1, disk.Remove, disk.Sticky)
	g.Step(int64(g.chunk))
	g.Inject(5, disk.Remove, disk.Sticky)
	g.Poll()
	if st := g.Status(); st.State != "degraded" || !g.has("reconstruction.aborted") {
		t.Fatalf("status %+v events %v", st, g.kinds())
	}
}

func TestPacer(t *testing.T) {
	r := Reconstruction{Priority: Adaptive, LowRate: 2 * MB, MaxRate: 200 * MB}
	if got := r.RateFor(0); got != 200*MB {
		t.Fatalf("idle adaptive: %d", got)
	}
	if got := r.RateFor(1); got != 2*MB {
		t.Fatalf("saturated adaptive: %d", got)
	}
	if got := r.RateFor(0.5); got != 100*MB {
		t.Fatalf("half-loaded adaptive: %d", got)
	}
	p := Pacer{Recon: Reconstruction{Priority: Low, LowRate: 1 * MB}}
	if b := p.Budget(100*time.Millisecond, 0); b != 100_000 {
		t.Fatalf("low budget %d", b)
	}
	p.Spent(60_000)
	if b := p.Budget(100*time.Millisecond, 0); b != 140_000 {
		t.Fatalf("credit carried: %d", b)
	}
	h := Pacer{Recon: Reconstruction{Priority: High}}
	if b := h.Budget(time.Second, 1); b != -1 {
		t.Fatalf("high budget %d", b)
	}
}

func TestParsePolicies(t *testing.T) {
	for in, want := range map[string]string{
		"paranoid": "paranoid", "tolerant": "tolerant", "threshold(3, 10m)": "threshold(3, 10m0s)", " threshold(1,1s) ": "threshold(1, 1s)",
	} {
		p, err := ParseTransientPolicy(in)
		if err != nil || p.String() != want {
			t.Fatalf("%q: %v %v", in, p, err)
		}
	}
	for _, bad := range []string{"", "linux", "threshold(0, 1m)", "threshold(3)", "threshold(3, -1s)", "threshold(x, 1m)"} {
		if _, err := ParseTransientPolicy(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	var r Reconstruction
	for in, want := range map[string]int64{"20MB/s": 20 * MB, "512KB/s": 512_000, "1GB/s": 1e9, "5": 5 * MB} {
		if err := r.ParsePriority(in); err != nil || r.Priority != Fixed || r.Rate != want {
			t.Fatalf("%q: %+v %v", in, r, err)
		}
	}
	for _, bad := range []string{"fast", "0MB/s", "-1MB/s", "MB/s"} {
		if err := r.ParsePriority(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// TestConcurrentIODuringRebuild: clients each own a region and check their
// own data while a member is lost and rebuilt under them (run with -race).
func TestConcurrentIODuringRebuild(t *testing.T) {
	f := newFixture(t, testConfig(), 0)
	const clients = 4
	region := f.Size() / clients / BlockSize * BlockSize
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for c := 0; c < clients; c++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 9))
			base := int64(c) * region
			mine := make([]byte, region)
			if err := f.WriteAt(mine, base); err != nil {
				t.Error(err)
				return
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				off := rng.Int64N(region/BlockSize-2) * BlockSize
				if i%2 == 0 {
					p := fill(rng, 2*BlockSize)
					if err := f.WriteAt(p, base+off); err != nil {
						t.Error(err)
						return
					}
					copy(mine[off:], p)
				} else {
					p := make([]byte, 2*BlockSize)
					if err := f.ReadAt(p, base+off); err != nil || !bytes.Equal(p, mine[off:off+2*BlockSize]) {
						t.Errorf("client %d: read at %d: %v", c, off, err)
						return
					}
				}
			}
		})
	}
	f.Inject(2, disk.Remove, disk.Sticky)
	for f.Rebuilding() {
		f.Step(int64(f.chunk))
		f.Status()
	}
	close(stop)
	wg.Wait()
	if st := f.Status(); st.Redundancy != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestFaultIDBase: ids start above Config.FaultIDBase, and the status
// names faults by those ids (not by the disk's own numbering), so that an
// id read from the status reverts the fault it names.
func TestFaultIDBase(t *testing.T) {
	cfg := testConfig()
	cfg.FaultIDBase = 7 << 21
	f := newFixture(t, cfg, 0)
	id1, err := f.Inject(2, disk.ReadCorrectable, disk.Sticky)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := f.Inject(2, disk.WriteCorrectable, disk.Sticky)
	if err != nil {
		t.Fatal(err)
	}
	if id1 != cfg.FaultIDBase+1 || id2 != cfg.FaultIDBase+2 {
		t.Fatalf("ids %d, %d; want %d, %d", id1, id2, cfg.FaultIDBase+1, cfg.FaultIDBase+2)
	}
	if f.Revert(1) || f.Revert(2) {
		t.Fatal("reverted a fault by the disk's own number")
	}
	got := f.Status().Disks[1].Faults
	if len(got) != 2 || got[0].ID != id1 || got[1].ID != id2 {
		t.Fatalf("status faults %+v; want ids %d, %d", got, id1, id2)
	}
	if !f.Revert(got[1].ID) {
		t.Fatal("revert by the status's id")
	}
	if got := f.Status().Disks[1].Faults; len(got) != 1 || got[0].ID != id1 || got[0].Type != disk.ReadCorrectable.String() {
		t.Fatalf("after the revert: %+v", got)
	}
	cfg.FaultIDBase = -1
	if err := cfg.Validate(); err == nil {
		t.Fatal("negative FaultIDBase accepted")
	}
}
