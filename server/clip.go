package server

import (
	"fmt"
	"unicode/utf8"

	"github.com/majlis-dev/majlis/wire"
)

// A refusal's message and details echo what the request named (a holder,
// a path, a binding); a request can name anything up to the body limit.
// Echoed text is clipped, so that a refusal stays small whatever was sent.
const (
	maxMessage = 2048 // bytes of a refusal's message
	maxDetail  = 512  // bytes of each string among its details
)

// clip returns s cut to at most n bytes (at a character boundary), with
// a note of its full length when it was cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d bytes in all)", len(s))
}

// clipValue clips every string within v (maps and slices of the JSON
// kinds); other values are kept as they are: they come from the ledgers
// and records, which bound their own sizes.
func clipValue(v any) any {
	switch v := v.(type) {
	case string:
		return clip(v, maxDetail)
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = clip(s, maxDetail)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = clipValue(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[clip(k, maxDetail)] = clipValue(x)
		}
		return out
	}
	return v
}

// clipped is r with its echoed text clipped.
func clipped(r wire.Refusal) wire.Refusal {
	r.Message = clip(r.Message, maxMessage)
	r.Details, _ = clipValue(r.Details).(map[string]any)
	if r.Details == nil {
		r.Details = map[string]any{}
	}
	return r
}
