// Command testfmt reads `go test -json` on stdin and tells a person what
// the run is doing: a line when each package finishes (its result, its
// time, its test count), a line every -every while packages run (which
// ones, for how long), the output of every failed test, and at the end
// the slowest packages and tests. It writes the JSON it read to -save, so
// that a run can be examined afterwards.
//
// It exits 1 when a package or test failed, a package did not build, or
// the input ended before a package finished (go test killed by its
// -timeout, or by a signal): a run that did not pass is never reported
// green. The caller still checks go test's own exit status.
//
//	go test -json ./... | go run ./scripts/testfmt -save bin/test.json
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// event is one line of `go test -json` (test2json's format).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail
}

type pkg struct {
	name    string
	start   time.Time
	done    bool
	result  string // ok, FAIL, skip
	elapsed float64
	tests   int
	output  map[string][]string // per test ("" for the package), kept until it passes
	failed  []string            // failed tests, in order
}

type run struct {
	mu      sync.Mutex
	out     io.Writer
	module  string
	pkgs    map[string]*pkg
	order   []string
	tests   []testTime
	builds  map[string][]string // build output per import path
	bfailed []string
	begun   time.Time
}

type testTime struct {
	pkg, name string
	elapsed   float64
}

func main() {
	save := flag.String("save", "", "write the JSON read to this file")
	every := flag.Duration("every", 30*time.Second, "how often to say which packages are still running")
	top := flag.Int("top", 10, "how many of the slowest packages and tests to list at the end")
	flag.Parse()

	var in io.Reader = os.Stdin
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testfmt:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	r := &run{out: os.Stdout, pkgs: map[string]*pkg{}, builds: map[string][]string{}, begun: time.Now(),
		module: modulePath()}
	fmt.Fprintf(r.out, "testing (a line per package as it finishes; the first lines wait for the build)\n")
	stop := make(chan struct{})
	go r.ticker(*every, stop)
	r.read(in)
	close(stop)
	if !r.summary(*top) {
		os.Exit(1)
	}
}

func (r *run) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: go test's own message (a build error printed
			// outside JSON). Show it as it is.
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.mu.Lock()
		r.handle(e)
		r.mu.Unlock()
	}
}

func (r *run) handle(e event) {
	switch e.Action {
	case "build-output":
		r.builds[e.ImportPath] = append(r.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		r.bfailed = append(r.bfailed, e.ImportPath)
		fmt.Fprintf(r.out, "BUILD FAIL %s\n%s", r.short(e.ImportPath), strings.Join(r.builds[e.ImportPath], ""))
		return
	}
	if e.Package == "" {
		return
	}
	p := r.pkgs[e.Package]
	if p == nil {
		p = &pkg{name: e.Package, start: e.Time, output: map[string][]string{}}
		r.pkgs[e.Package] = p
		r.order = append(r.order, e.Package)
	}
	switch e.Action {
	case "output":
		p.output[e.Test] = append(p.output[e.Test], e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.finish(p, e)
			return
		}
		if e.Action == "fail" {
			p.failed = append(p.failed, e.Test)
			return // its output is printed with the package's result
		}
		if !strings.Contains(e.Test, "/") {
			p.tests++
			r.tests = append(r.tests, testTime{pkg: e.Package, name: e.Test, elapsed: e.Elapsed})
		}
		if e.Action == "pass" {
			delete(p.output, e.Test)
		}
	}
}

func (r *run) finish(p *pkg, e event) {
	p.done, p.elapsed = true, e.Elapsed
	switch e.Action {
	case "pass":
		p.result = "ok"
	case "skip":
		p.result = "skip" // no test files
		return
	default:
		p.result = "FAIL"
	}
	fmt.Fprintf(r.out, "%-4s  %-40s %7.1fs  %d tests\n", p.result, r.short(p.name), p.elapsed, p.tests)
	if p.result != "FAIL" {
		return
	}
	if len(p.failed) == 0 { // the package failed outside any test (TestMain, a panic, a timeout)
		fmt.Fprint(r.out, indent(strings.Join(p.output[""], "")))
	}
	for _, t := range p.failed {
		if strings.Contains(t, "/") && contains(p.failed, t[:strings.LastIndex(t, "/")]) {
			continue // printed with its parent
		}
		fmt.Fprintf(r.out, "  --- FAIL %s\n", t)
		fmt.Fprint(r.out, indent(strings.Join(testOutput(p.output, t), "")))
	}
}

// testOutput is the output of t and of its subtests, in test order.
func testOutput(out map[string][]string, t string) []string {
	names := []string{}
	for n := range out {
		if n == t || strings.HasPrefix(n, t+"/") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var lines []string
	for _, n := range names {
		lines = append(lines, out[n]...)
	}
	return lines
}

func (r *run) ticker(every time.Duration, stop chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			r.mu.Lock()
			var running []string
			for _, n := range r.order {
				if p := r.pkgs[n]; !p.done {
					running = append(running, fmt.Sprintf("%s (%ds)", r.short(n), int(now.Sub(p.start).Seconds())))
				}
			}
			if len(running) == 0 {
				fmt.Fprintf(r.out, "      building test binaries (%s so far)\n", since(r.begun, now))
			} else {
				fmt.Fprintf(r.out, "      running %s; %s so far\n", strings.Join(running, ", "), since(r.begun, now))
			}
			r.mu.Unlock()
		}
	}
}

// summary prints the slowest packages and tests and the verdict, and
// reports whether the run passed.
func (r *run) summary(top int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var failed, unfinished []string
	var done []*pkg
	for _, n := range r.order {
		p := r.pkgs[n]
		switch {
		case !p.done:
			unfinished = append(unfinished, r.short(n))
		case p.result == "FAIL":
			failed = append(failed, r.short(n))
		}
		if p.done && p.result != "skip" {
			done = append(done, p)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].elapsed > done[j].elapsed })
	sort.Slice(r.tests, func(i, j int) bool { return r.tests[i].elapsed > r.tests[j].elapsed })
	fmt.Fprintf(r.out, "\nslowest packages:")
	for i, p := range done {
		if i == top {
			break
		}
		fmt.Fprintf(r.out, " %s %.0fs", r.short(p.name), p.elapsed)
		if i < len(done)-1 && i < top-1 {
			fmt.Fprint(r.out, ",")
		}
	}
	fmt.Fprintf(r.out, "\nslowest tests:\n")
	for i, t := range r.tests {
		if i == top {
			break
		}
		fmt.Fprintf(r.out, "  %6.1fs  %s %s\n", t.elapsed, r.short(t.pkg), t.name)
	}
	for _, b := range r.bfailed {
		failed = append(failed, r.short(b)+" (build)")
	}
	elapsed := since(r.begun, time.Now())
	switch {
	case len(failed) > 0:
		fmt.Fprintf(r.out, "FAIL in %s: %s\n", elapsed, strings.Join(failed, ", "))
	case len(unfinished) > 0:
		fmt.Fprintf(r.out, "FAIL in %s: did not finish (killed, or go test's -timeout): %s\n", elapsed, strings.Join(unfinished, ", "))
	case len(done) == 0:
		fmt.Fprintf(r.out, "FAIL: no package was tested\n")
	default:
		fmt.Fprintf(r.out, "ok: %d packages passed in %s\n", len(done), elapsed)
		return true
	}
	return false
}

func (r *run) short(path string) string {
	if s, ok := strings.CutPrefix(path, r.module+"/"); ok {
		return s
	}
	return path
}

// modulePath is the module's path, read from go.mod in the working
// directory (empty if there is none: names are then shown whole).
func modulePath() string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

func since(t, now time.Time) string {
	d := now.Sub(t).Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
