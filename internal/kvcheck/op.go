package kvcheck

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind is what an operation did.
type Kind uint8

// The operations of a history.
const (
	Put Kind = iota
	Get
)

// Result is how an operation ended.
type Result uint8

// Results of a put (Acked, Unacked) and of a get (Found, Missing, Garbage).
const (
	Acked   Result = iota // put: the service acknowledged the write
	Unacked               // put: sent, but no acknowledgement (timeout, error): it may or may not have been applied
	Found                 // get: returned a value of this user for this key, at Op.Version
	Missing               // get: the service said the key does not exist (version 0)
	Garbage               // get: returned a value that is no value the user wrote for this key
	numResults
)

var resultNames = [numResults]string{"acked", "unacked", "found", "missing", "garbage"}

func (r Result) String() string {
	if r < numResults {
		return resultNames[r]
	}
	return "result(" + strconv.Itoa(int(r)) + ")"
}

// Op is one operation of a history. A user's operations are added in the
// order the user made them (each ended before the next began).
type Op struct {
	StartS, EndS float64 // seconds since the run started: scheduled start, outcome
	Client, User uint32  // the user: client emulator and user number in it
	Key          uint32  // the user's key number
	Kind         Kind
	Version      uint64 // put: the version written; get: the version returned (0 when missing)
	Result       Result
}

// HistoryFile is the name of the kv driver's history in a results directory.
const HistoryFile = "kv-history.csv"

// HistoryHeader is the history's first line; the columns in order.
const HistoryHeader = "t_start_s,t_end_s,client,user,key,op,version,result"

// AppendLine appends op as one history line (with its newline) to dst.
func AppendLine(dst []byte, op Op) []byte {
	dst = strconv.AppendFloat(dst, op.StartS, 'f', 6, 64)
	dst = append(dst, ',')
	dst = strconv.AppendFloat(dst, op.EndS, 'f', 6, 64)
	dst = append(dst, ',')
	dst = strconv.AppendUint(dst, uint64(op.Client), 10)
	dst = append(dst, ',')
	dst = strconv.AppendUint(dst, uint64(op.User), 10)
	dst = append(dst, ',')
	dst = strconv.AppendUint(dst, uint64(op.Key), 10)
	if op.Kind == Put {
		dst = append(dst, ",put,"...)
	} else {
		dst = append(dst, ",get,"...)
	}
	dst = strconv.AppendUint(dst, op.Version, 10)
	dst = append(dst, ',')
	dst = append(dst, op.Result.String()...)
	return append(dst, '\n')
}

// ErrHistory is wrapped by every error ReadHistory returns for a malformed
// history.
var ErrHistory = errors.New("malformed kv history")

// maxLine bounds a history line; a longer one is malformed.
const maxLine = 256

// ReadHistory decodes a history written by a Writer, calling fn for each
// operation in file order; name is used in errors ("FILE:LINE: ..."). It
// stops at the first malformed line or the first error fn returns.
func ReadHistory(r io.Reader, name string, fn func(Op) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, maxLine), maxLine)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			if text != HistoryHeader {
				return fmt.Errorf("%w: %s:1: header %q, want %q", ErrHistory, name, trunc(text), HistoryHeader)
			}
			continue
		}
		op, err := ParseLine(text)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: %w", ErrHistory, name, line, err)
		}
		if err := fn(op); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %s:%d: %w", ErrHistory, name, line+1, err)
	}
	if line == 0 {
		return fmt.Errorf("%w: %s: empty, want the header %q", ErrHistory, name, HistoryHeader)
	}
	return nil
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// ParseLine decodes one history line (without its newline).
func ParseLine(s string) (Op, error) {
	var f [8]string
	n := 0
	for n < 7 {
		i := strings.IndexByte(s, ',')
		if i < 0 {
			return Op{}, fmt.Errorf("%d fields, want 8 (%s)", n+1, HistoryHeader)
		}
		f[n], s = s[:i], s[i+1:]
		n++
	}
	f[7] = s
	var op Op
	var err error
	if op.StartS, err = seconds(f[0], "t_start_s"); err != nil {
		return Op{}, err
	}
	if op.EndS, err = seconds(f[1], "t_end_s"); err != nil {
		return Op{}, err
	}
	if op.EndS < op.StartS {
		return Op{}, fmt.Errorf("t_end_s %s is before t_start_s %s", f[1], f[0])
	}
	ids := [3]*uint32{&op.Client, &op.User, &op.Key}
	for i, name := range []string{"client", "user", "key"} {
		v, err := strconv.ParseUint(f[2+i], 10, 32)
		if err != nil {
			return Op{}, fmt.Errorf("%s %q is not a number from 0 to %d", name, trunc(f[2+i]), uint32(math.MaxUint32))
		}
		*ids[i] = uint32(v)
	}
	switch f[5] {
	case "put":
		op.Kind = Put
	case "get":
		op.Kind = Get
	default:
		return Op{}, fmt.Errorf("op %q is neither put nor get", trunc(f[5]))
	}
	if op.Version, err = strconv.ParseUint(f[6], 10, 64); err != nil {
		return Op{}, fmt.Errorf("version %q is not a non-negative integer", trunc(f[6]))
	}
	if op.Result, err = parseResult(f[7], op.Kind); err != nil {
		return Op{}, err
	}
	if op.Kind == Put && op.Version == 0 {
		return Op{}, errors.New("put of version 0: versions start at 1")
	}
	if op.Result == Missing && op.Version != 0 {
		return Op{}, fmt.Errorf("get missing with version %d, want 0", op.Version)
	}
	return op, nil
}

func seconds(s, name string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%s %q is not a non-negative number of seconds", name, trunc(s))
	}
	return v, nil
}

func parseResult(s string, k Kind) (Result, error) {
	for i, n := range resultNames {
		if n != s {
			continue
		}
		r := Result(i)
		if (k == Put) != (r == Acked || r == Unacked) {
			break
		}
		return r, nil
	}
	if k == Put {
		return 0, fmt.Errorf("put result %q, want acked or unacked", trunc(s))
	}
	return 0, fmt.Errorf("get result %q, want found, missing or garbage", trunc(s))
}

// Writer appends a history to w. Record may be called from many goroutines
// at once; a user's operations must be recorded in the order the user made
// them (before the user's next operation begins). Close flushes; errors of
// the underlying writer are returned by Close.
type Writer struct {
	origin time.Time
	mu     sync.Mutex
	bw     *bufio.Writer
	buf    []byte
	err    error
}

// NewWriter writes the header and returns a Writer whose RecordAt counts
// seconds from origin (the run's start).
func NewWriter(w io.Writer, origin time.Time) *Writer {
	hw := &Writer{origin: origin, bw: bufio.NewWriterSize(w, 64<<10)}
	_, hw.err = hw.bw.WriteString(HistoryHeader + "\n")
	return hw
}

// Record appends op.
func (w *Writer) Record(op Op) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.buf = AppendLine(w.buf[:0], op)
	_, w.err = w.bw.Write(w.buf)
}

// RecordAt appends op with StartS and EndS set from start and end.
func (w *Writer) RecordAt(start, end time.Time, op Op) {
	op.StartS = max(start.Sub(w.origin).Seconds(), 0)
	op.EndS = max(end.Sub(w.origin).Seconds(), op.StartS)
	w.Record(op)
}

// Close flushes what is buffered and returns the first write error. Safe twice.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.bw.Flush()
		if w.err == nil {
			w.err = errClosed
			return nil
		}
	}
	if w.err == errClosed {
		return nil
	}
	return w.err
}

var errClosed = errors.New("kv history closed")
