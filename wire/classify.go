package wire

import (
	"errors"
	"fmt"
	"strings"
)

// How an error gets its code. A library declares each sentinel with its
// code (Sentinel); an error type that stands for a code of its own (a git
// failure, a usage error) implements Coded; an error type that carries
// facts implements Detailed, and one that adds facts to what it wraps,
// Annotated. Classify walks the error as errors.As does: the first coded
// error that is not a fallback decides; failing that, the first fallback
// code of the table (in its order) that the error holds; failing that,
// internal. No list of sentinels is kept anywhere else.

// Coded is implemented by every error that is one of the table's codes.
type Coded interface {
	error
	ErrorCode() string
}

// Detailed is implemented by the library's error types that carry facts
// (the operation, the path, the holder ...). A refusal's details are the
// facts of its coded error when it is Detailed, else of the innermost
// Detailed error around it.
type Detailed interface {
	error
	ErrorDetails() map[string]any
}

// Annotated is implemented by errors that add facts to the details of
// whatever they wrap: a stale confirmation's comparison, the workspace
// that a begin left in place.
type Annotated interface {
	error
	AnnotateDetails(details map[string]any)
}

// Begun is implemented by the error of a begin (or an allocate with
// ports) whose workspace was allocated but whose leases were refused:
// its hint says how to resume it or take the workspace back, whatever
// the refusal's code.
type Begun interface {
	error
	BegunTask() (task, requestID string, ports bool)
}

// A sentinel is an error that is one code.
type sentinel struct{ code, msg string }

func (e *sentinel) Error() string     { return e.msg }
func (e *sentinel) ErrorCode() string { return e.code }

// Sentinel returns a new sentinel error (compared with errors.Is, as one
// of errors.New) whose code is code. It panics when the table has no such
// code: add the code to the table first (codes.go).
//
//	var ErrHeld = wire.Sentinel("held", "admission: held by another holder")
func Sentinel(code, msg string) error {
	if _, ok := codeByName[code]; !ok {
		panic(fmt.Sprintf("wire.Sentinel(%q, %q): the code table has no such code", code, msg))
	}
	return &sentinel{code: code, msg: msg}
}

// Classify is err as a script sees it on surface s: its code, exit
// status and facts, with the hint of the code table in s's words at the
// end of the message (replacing the library's hint, which says the same
// in words) and in details.hint. Details are never nil.
func Classify(err error, s Surface) Refusal {
	c := classify(err, s)
	msg := err.Error()
	if c.hint != "" {
		msg = strings.TrimSuffix(msg, "; "+c.libHint) + "; " + c.hint
	}
	if c.details == nil {
		c.details = map[string]any{}
	}
	return Refusal{Code: c.code.Code, Message: msg, Details: c.details, ExitCode: c.code.Exit}.In(s)
}

// Of is the code of err (internal when it has none).
func Of(err error) Code {
	c, _ := codeOf(err)
	return *c
}

// A classification is what classify found.
type classification struct {
	code    *Code
	details map[string]any
	hint    string // the table's (or a begin's) hint on the surface
	libHint string // the library's hint that hint replaces (or holds)
}

func classify(err error, s Surface) classification {
	code, details := codeOf(err)
	c := classification{code: code, details: details}
	walk(err, nil, func(e error, _ Detailed) bool {
		if a, ok := e.(Annotated); ok {
			c.details = copyDetails(c.details)
			a.AnnotateDetails(c.details)
		}
		return false
	})
	var begun Begun
	if errors.As(err, &begun) {
		c.hint = beginHint(s, begun)
	} else {
		var adds bool
		c.hint, adds = hintOn(s, code, c.details)
		if lib, _ := c.details["hint"].(string); lib != "" && c.hint != "" {
			if adds {
				c.hint = lib + "; " + c.hint
			}
			c.libHint = lib
		}
	}
	if c.hint != "" {
		c.details = copyDetails(c.details)
		c.details["hint"] = c.hint
	}
	return c
}

// codeOf finds err's code and its facts.
func codeOf(err error) (*Code, map[string]any) {
	var found *Code
	var details map[string]any
	walk(err, nil, func(e error, around Detailed) bool {
		c := codeIn(e)
		if c == nil || c.Fallback {
			return false
		}
		found = c
		if d, ok := e.(Detailed); ok {
			around = d
		}
		if around != nil {
			details = around.ErrorDetails()
		}
		return true
	})
	if found != nil {
		return found, details
	}
	for i := range codes {
		if !codes[i].Fallback {
			continue
		}
		walk(err, nil, func(e error, _ Detailed) bool {
			if codeIn(e) != &codes[i] {
				return false
			}
			found = &codes[i]
			if d, ok := e.(Detailed); ok {
				details = d.ErrorDetails()
			}
			return true
		})
		if found != nil {
			return found, details
		}
	}
	return codeByName["internal"], nil
}

// codeIn is the code e itself has, or nil.
func codeIn(e error) *Code {
	if ce, ok := e.(Coded); ok {
		return codeByName[ce.ErrorCode()]
	}
	return nil
}

// walk visits err's tree depth first, in the order errors.As does, with
// the innermost Detailed error around each error (nil at the top); it
// stops when visit returns true, and then returns true.
func walk(err error, around Detailed, visit func(e error, around Detailed) bool) bool {
	if err == nil {
		return false
	}
	if visit(err, around) {
		return true
	}
	if d, ok := err.(Detailed); ok {
		around = d
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), around, visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if walk(e, around, visit) {
				return true
			}
		}
	}
	return false
}

// copyDetails is a copy of d that can be written (d may be a library's).
func copyDetails(d map[string]any) map[string]any {
	out := make(map[string]any, len(d)+1)
	for k, v := range d {
		out[k] = v
	}
	return out
}
