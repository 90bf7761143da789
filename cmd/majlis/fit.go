package main

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// humanWidth is the widest line majlis prints for people: tables and
// previews are wrapped to fit it.
const humanWidth = 100

// writeFitted renders people-text into one buffer, wraps every line wider
// than humanWidth at spaces (continuation lines indented under the line's
// second column, so a table keeps its shape), and writes it with one write.
// A single word wider than the line (a very long path) is left whole.
func writeFitted(w io.Writer, render func(io.Writer)) {
	var buf bytes.Buffer
	render(&buf)
	_, _ = w.Write([]byte(fitLines(buf.String(), humanWidth))) // people-text: a failed write is not an error
}

// fitLines wraps the lines of s that are wider than width.
func fitLines(s string, width int) string {
	if !strings.Contains(s, "\n") && utf8.RuneCountInString(s) <= width {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	b.Grow(len(s))
	for _, line := range lines {
		body := strings.TrimSuffix(line, "\n")
		if utf8.RuneCountInString(body) <= width {
			b.WriteString(line)
			continue
		}
		wrapLine(&b, body, width)
		if strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// wrapLine writes line broken at spaces into pieces of at most width runes
// where it can.
func wrapLine(b *strings.Builder, line string, width int) {
	indent := continuationIndent(line, width)
	pad := strings.Repeat(" ", indent)
	first := true
	for {
		limit := width
		if !first {
			limit = width - indent
		}
		if utf8.RuneCountInString(line) <= limit {
			if !first {
				b.WriteString(pad)
			}
			b.WriteString(line)
			return
		}
		cut := breakAt(line, limit, first, indent)
		if cut <= 0 {
			// No space to break at: the rest stays whole.
			if !first {
				b.WriteString(pad)
			}
			b.WriteString(line)
			return
		}
		if !first {
			b.WriteString(pad)
		}
		b.WriteString(strings.TrimRight(line[:cut], " "))
		b.WriteByte('\n')
		line = strings.TrimLeft(line[cut:], " ")
		first = false
	}
}

// breakAt is the byte offset of the last space within the first limit
// runes of line (on the first line, not inside its leading label), or
// else of the first space after them; 0 when there is none.
func breakAt(line string, limit int, first bool, indent int) int {
	minimum := 1
	if first {
		minimum = indent
	}
	last, runes := 0, 0
	for i, r := range line {
		if runes > limit {
			break
		}
		if r == ' ' && runes >= minimum && i > 0 && line[i-1] != ' ' {
			last = i
		}
		runes++
	}
	if last > 0 {
		return last
	}
	// A word longer than the line: break after it instead.
	runes = 0
	for i, r := range line {
		if r == ' ' && runes >= minimum && i > 0 && line[i-1] != ' ' {
			return i
		}
		runes++
	}
	return 0
}

// continuationIndent is where a wrapped line's further lines start: under
// its second column (the text after the first gap of two spaces or more),
// or four spaces in when it has none or the column is too far right.
func continuationIndent(line string, width int) int {
	runes := 0
	seenText, gap := false, 0
	for _, r := range line {
		switch {
		case r == ' ':
			gap++
		case seenText && gap >= 2:
			if runes <= width/2 {
				return runes
			}
			return 4
		default:
			seenText, gap = true, 0
		}
		runes++
	}
	return 4
}
