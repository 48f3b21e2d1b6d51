package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Labels every object the backend creates carries; cleanup finds them by
// these.
const (
	LabelRun   = "faultbench.run"   // the run id
	LabelNode  = "faultbench.node"  // the node number
	LabelRole  = "faultbench.role"  // holder | app
	LabelIP    = "faultbench.ip"    // on a holder: its address on the run's network
	LabelImage = "faultbench.image" // on images: the binary's sha256
	imageRepo  = "faultbench-node"
	binaryPath = "/faultbench"
)

// Image is the faultbench image of one binary.
type Image struct {
	Ref     string // faultbench-node:<first 12 hex digits of the content hash>
	ID      string // the engine's image id
	Created bool   // this call imported it (it was not there)
}

// EnsureImage makes sure the engine holds a FROM-scratch image of exe (and,
// when exe is dynamically linked, its loader and libraries, found with
// ldd), tagged with a hash of that content, and returns it. It never
// pulls: the image is imported from a tar built here.
func EnsureImage(ctx context.Context, eng Engine, exe string) (Image, error) {
	files, err := imageFiles(exe)
	if err != nil {
		return Image{}, err
	}
	sum, err := contentHash(files)
	if err != nil {
		return Image{}, err
	}
	ref := imageRepo + ":" + sum[:12]
	if info, err := eng.ImageInspect(ctx, ref); err == nil {
		return Image{Ref: ref, ID: info.ID}, nil
	} else if !IsNotFound(err) {
		return Image{}, fmt.Errorf("docker: inspect image %s: %w", ref, err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, files)) }()
	changes := []string{
		`ENTRYPOINT ["` + binaryPath + `"]`,
		"LABEL " + LabelImage + "=" + sum,
		"LABEL faultbench=1",
	}
	if err := eng.ImageImport(ctx, pr, ref, changes); err != nil {
		_ = pr.CloseWithError(err)
		return Image{}, fmt.Errorf("docker: import image %s from %s: %w", ref, exe, err)
	}
	info, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		return Image{}, fmt.Errorf("docker: image %s not found after import: %w", ref, err)
	}
	return Image{Ref: ref, ID: info.ID, Created: true}, nil
}

// imageFile is one file of the image: where it is on the host, where it
// goes in the image.
type imageFile struct{ host, image string }

// imageFiles is exe as /faultbench plus, when it is dynamically linked,
// its interpreter and libraries at their own paths.
func imageFiles(exe string) ([]imageFile, error) {
	files := []imageFile{{host: exe, image: binaryPath}}
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("docker: image: %s is not an executable this backend can package: %w", exe, err)
	}
	defer f.Close()
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	if !dynamic {
		return files, nil
	}
	out, err := exec.Command("ldd", exe).Output()
	if err != nil {
		return nil, fmt.Errorf("docker: image: %s is dynamically linked and ldd failed (%v): build it with CGO_ENABLED=0", exe, err)
	}
	libs := parseLdd(string(out))
	if len(libs) == 0 {
		return nil, fmt.Errorf("docker: image: ldd %s named no library: build it with CGO_ENABLED=0", exe)
	}
	for _, l := range libs {
		files = append(files, imageFile{host: l, image: l})
	}
	return files, nil
}

var lddPath = regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)`)

// parseLdd extracts the absolute paths of ldd's output, sorted, each once.
func parseLdd(out string) []string {
	seen := map[string]bool{}
	var libs []string
	for _, line := range strings.Split(out, "\n") {
		m := lddPath.FindStringSubmatch(line)
		if m == nil || seen[m[1]] || strings.Contains(m[1], "..") {
			continue
		}
		seen[m[1]] = true
		libs = append(libs, m[1])
	}
	sort.Strings(libs)
	return libs
}

// contentHash is the sha256 over every file's image path and content.
func contentHash(files []imageFile) (string, error) {
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f.host)
		if err != nil {
			return "", fmt.Errorf("docker: image: %w", err)
		}
		_ = binary.Write(h, binary.BigEndian, int64(len(b)))
		h.Write([]byte(f.image))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeTar writes the image's root file system: the files (symlinks
// resolved), their directories, and /tmp.
func writeTar(w io.Writer, files []imageFile) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{"tmp": true}
	for _, f := range files {
		for d := filepath.Dir(strings.TrimPrefix(f.image, "/")); d != "." && d != ""; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var names []string
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode}); err != nil {
			return err
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f.host)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.image, "/"), Mode: 0o755, Size: int64(len(b))}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.Copy(tw, bytes.NewReader(b)); err != nil {
			return err
		}
	}
	return tw.Close()
}

// demuxLogs turns the engine's multiplexed log stream (8-byte frame
// headers: stream, 3 zero bytes, big-endian length) into plain text; a
// stream that is not multiplexed (a TTY) is returned as it is, and a torn
// last frame is kept as far as it goes.
func demuxLogs(b []byte) []byte {
	if len(b) < 8 || b[0] > 2 || b[1] != 0 || b[2] != 0 || b[3] != 0 {
		return b
	}
	var out []byte
	for len(b) >= 8 {
		if b[0] > 2 || b[1] != 0 || b[2] != 0 || b[3] != 0 {
			return append(out, b...)
		}
		n := int(binary.BigEndian.Uint32(b[4:8]))
		b = b[8:]
		if n > len(b) {
			n = len(b)
		}
		out = append(out, b[:n]...)
		b = b[n:]
	}
	return append(out, b...)
}
