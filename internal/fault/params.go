package fault

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Params are the typed parameters of one fault type, decoded from a
// scenario fault's `params:` map (toxiproxy's LatencyToxic{Latency, Jitter}
// is the model). A Params is a pointer to a struct whose exported fields
// carry a `param:"name"` tag; the struct returned by an injector's NewParams
// holds the defaults. Validate checks the decoded values together (ranges,
// combinations) and is called by DecodeParams, so a Params an injector
// receives is always valid.
type Params interface {
	Validate() error
}

// ParamsInjector is an optional Injector capability: the injector takes
// parameters, and NewParams returns a fresh Params holding their defaults.
// An injector without it takes no parameters: any key is an error.
//
// NewParams may be called from any goroutine and must return a new value
// each time (DecodeParams writes into it).
type ParamsInjector interface {
	Injector
	NewParams() Params
}

// NoParams is the Params of a fault type that takes none.
type NoParams struct{}

// Validate accepts the empty set.
func (*NoParams) Validate() error { return nil }

// ParamError is a problem with one parameter of a fault; Key is "" for the
// parameters as a whole (a combination Validate rejects). A Validate method
// names the key its error is about by returning a *ParamError, or any error
// with a ParamKey() string method (for packages that do not import fault).
type ParamError struct {
	Key   string
	Known []string // the keys the fault type takes, for unknown keys
	Err   error
}

func (e *ParamError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("params: %v", e.Err)
	}
	return fmt.Sprintf("params.%s: %v", e.Key, e.Err)
}

func (e *ParamError) Unwrap() error { return e.Err }

// ParamKey is the parameter the error is about.
func (e *ParamError) ParamKey() string { return e.Key }

// ErrUnknownParam is wrapped by the *ParamError of a key the fault type does
// not take.
var ErrUnknownParam = errors.New("unknown parameter")

// ParamsFor returns the defaults of inj's parameters: inj's NewParams, or
// *NoParams for an injector that takes none.
func ParamsFor(inj Injector) Params {
	if pi, ok := inj.(ParamsInjector); ok {
		return pi.NewParams()
	}
	return &NoParams{}
}

// ParseParams decodes raw into the parameters inj takes for fault type typ
// and validates them. Every problem is a *ParamError, joined; a problem
// with one key names it, an unknown key lists the keys typ takes.
func ParseParams(inj Injector, typ string, raw map[string]string) (Params, error) {
	p := ParamsFor(inj)
	if err := DecodeParams(p, raw); err != nil {
		return nil, prefixParamErrors(typ, err)
	}
	return p, nil
}

// prefixParamErrors puts the fault type into each ParamError's message.
func prefixParamErrors(typ string, err error) error {
	var out []error
	for _, e := range unjoinErrors(err) {
		var pe *ParamError
		if errors.As(e, &pe) {
			out = append(out, &ParamError{Key: pe.Key, Known: pe.Known, Err: fmt.Errorf("%s: %w", typ, pe.Err)})
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

func unjoinErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// DecodeParams sets the fields of dst (a pointer to a struct, see Params)
// from raw, then calls dst.Validate when every key decoded. Keys raw lacks
// keep dst's values (the defaults). A field's type is string, bool, an
// integer, a float, time.Duration, or any type whose pointer implements
// encoding.TextUnmarshaler; embedded structs contribute their fields. The
// errors are *ParamErrors joined, in key order.
func DecodeParams(dst Params, raw map[string]string) error {
	fields, err := paramFields(dst)
	if err != nil {
		return err
	}
	known := slices.Sorted(maps.Keys(fields))
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		f, ok := fields[key]
		if !ok {
			err := fmt.Errorf("%w %q: it takes %s", ErrUnknownParam, key, knownList(known))
			errs = append(errs, &ParamError{Key: key, Known: known, Err: err})
			continue
		}
		if err := setParam(f, raw[key]); err != nil {
			errs = append(errs, &ParamError{Key: key, Err: err})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := dst.Validate(); err != nil {
		var pe *ParamError
		if errors.As(err, &pe) {
			return err
		}
		var keyed interface{ ParamKey() string }
		if errors.As(err, &keyed) {
			return &ParamError{Key: keyed.ParamKey(), Err: err}
		}
		return &ParamError{Err: err}
	}
	return nil
}

func knownList(known []string) string {
	if len(known) == 0 {
		return "no parameters"
	}
	return strings.Join(known, ", ")
}

// paramFields maps each param tag of dst's struct to its settable field.
func paramFields(dst Params) (map[string]reflect.Value, error) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("fault: params %T are not a pointer to a struct", dst)
	}
	fields := map[string]reflect.Value{}
	var walk func(s reflect.Value)
	walk = func(s reflect.Value) {
		for i := 0; i < s.NumField(); i++ {
			sf := s.Type().Field(i)
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				walk(s.Field(i))
				continue
			}
			if name := sf.Tag.Get("param"); name != "" && sf.IsExported() {
				fields[name] = s.Field(i)
			}
		}
	}
	walk(v.Elem())
	return fields, nil
}

var durationType = reflect.TypeFor[time.Duration]()

// setParam parses s into the field f.
func setParam(f reflect.Value, s string) error {
	if u, ok := f.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	if f.Type() == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (e.g. 100ms, 2s)", s)
		}
		f.SetInt(int64(d))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q: want true or false", s)
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, f.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		f.SetInt(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(s, f.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		f.SetFloat(x)
	default:
		return fmt.Errorf("fault: params field of type %s cannot be decoded", f.Type())
	}
	return nil
}

// WithParams adapts inject, which takes parameters P, to an Injector that
// declares them: its NewParams is newParams (which returns the defaults),
// and its Inject hands inject the occurrence's Params as a P. The Scheduler
// decodes and validates them before the run starts (NewScheduler), so
// inject never parses a map; an occurrence whose Params are not a P is an
// error (decode them with ParseParams).
func WithParams[P Params](newParams func() P, inject func(ctx context.Context, t Target, o Occurrence, p P) (Revert, error)) Injector {
	return paramsInjector[P]{newParams: newParams, inject: inject}
}

type paramsInjector[P Params] struct {
	newParams func() P
	inject    func(ctx context.Context, t Target, o Occurrence, p P) (Revert, error)
}

func (pi paramsInjector[P]) NewParams() Params { return pi.newParams() }

func (pi paramsInjector[P]) Inject(ctx context.Context, t Target, o Occurrence) (Revert, error) {
	p, ok := o.Params.(P)
	if !ok {
		return nil, fmt.Errorf("%s: params are %T, want %T: decode them with fault.ParseParams", o.Type, o.Params, pi.newParams())
	}
	return pi.inject(ctx, t, o, p)
}

// bindParams decodes the raw parameters of every occurrence for the
// injector the scheduler will use, so each Inject receives typed, valid
// Params. occ is modified in place.
func bindParams(occ []Occurrence, injector func(typ string) (Injector, error)) error {
	for i := range occ {
		if occ[i].Params != nil {
			continue // decoded already, e.g. by a test
		}
		inj, err := injector(occ[i].Type)
		if err != nil {
			return err
		}
		p, err := ParseParams(inj, occ[i].Type, occ[i].RawParams)
		if err != nil {
			return &FieldError{Index: occ[i].Source, Key: "params", Err: err}
		}
		occ[i].Params = p
	}
	return nil
}
