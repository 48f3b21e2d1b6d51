package disk

import (
	"fmt"
	"strings"
)

// Kind is a disk fault of Brown and Patterson (2000) Table 1, named as in docs/scenario.md.
type Kind int

// The fault kinds. Their String is the docs/scenario.md fault type.
const (
	ReadCorrectable    Kind = iota + 1 // a read succeeds after ECC/retries: ErrRecovered, data valid
	ReadUncorrectable                  // a read fails: ErrMedium
	WriteCorrectable                   // a write succeeds after retries: ErrRecovered
	WriteUncorrectable                 // a write fails, nothing written: ErrMedium
	HardwareError                      // any command fails: ErrHardware
	IllegalCommand                     // any command is rejected: ErrIllegalRequest
	HangRead                           // a read hangs
	HangWrite                          // a write hangs
	HangIdle                           // the disk hangs between commands: the next command of any kind hangs
	PowerFail                          // power fails during the next command (a write is torn), then the disk is gone
	Remove                             // the disk is pulled at once
)

var kindNames = [...]string{
	ReadCorrectable:    "disk-read-correctable",
	ReadUncorrectable:  "disk-read-uncorrectable",
	WriteCorrectable:   "disk-write-correctable",
	WriteUncorrectable: "disk-write-uncorrectable",
	HardwareError:      "disk-hw-error",
	IllegalCommand:     "disk-illegal-command",
	HangRead:           "disk-hang-read",
	HangWrite:          "disk-hang-write",
	HangIdle:           "disk-hang-idle",
	PowerFail:          "disk-power-fail",
	Remove:             "disk-remove",
}

// Kinds lists every fault kind in Table 1 order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindNames)-1)
	for k := ReadCorrectable; k <= Remove; k++ {
		out = append(out, k)
	}
	return out
}

func (k Kind) String() string {
	if k >= ReadCorrectable && k <= Remove {
		return kindNames[k]
	}
	return fmt.Sprintf("disk-fault(%d)", int(k))
}

// ParseKind parses a docs/scenario.md disk fault type such as "disk-hang-read".
func ParseKind(s string) (Kind, error) {
	for k := ReadCorrectable; k <= Remove; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	names := make([]string, 0, len(kindNames))
	for _, n := range kindNames[1:] {
		names = append(names, n)
	}
	return 0, fmt.Errorf("unknown disk fault %q (known: %s)", s, strings.Join(names, ", "))
}

func (k Kind) effectOn(o op) effect {
	switch k {
	case ReadCorrectable:
		if o == opRead {
			return effectRecovered
		}
	case ReadUncorrectable:
		if o == opRead {
			return effectMedium
		}
	case WriteCorrectable:
		if o == opWrite {
			return effectRecovered
		}
	case WriteUncorrectable:
		if o == opWrite {
			return effectMedium
		}
	case HardwareError:
		return effectHardware
	case IllegalCommand:
		return effectIllegal
	case HangRead:
		if o == opRead {
			return effectHang
		}
	case HangWrite:
		if o == opWrite {
			return effectHang
		}
	case HangIdle:
		return effectHang
	case PowerFail:
		return effectPowerFail
	}
	return effectNone
}

// Mode says how long a fault lasts.
type Mode int

// The modes of Brown and Patterson (2000) §3.1.
const (
	Transient Mode = iota + 1 // fires once, on the next matching command
	Sticky                    // fires on every matching command until reverted
)

func (m Mode) String() string {
	switch m {
	case Transient:
		return "transient"
	case Sticky:
		return "sticky"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode parses "transient" or "sticky"; the empty string is transient,
// the docs/scenario.md default.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "transient":
		return Transient, nil
	case "sticky":
		return Sticky, nil
	}
	return 0, fmt.Errorf("unknown fault mode %q (known: transient, sticky)", s)
}
