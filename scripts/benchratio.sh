#!/usr/bin/env bash
# benchratio.sh [FILE]: prints one table of every ratio of a majlis
# benchmark to its floor (plain git, bare syscalls, bare SQLite, bare
# etcd, a bare process start, the CLI, a bare server) from the output of
# `go test -bench` (default bench.txt), and fails (exit 1, after the
# table) when a benchmark that names a floor reports no ratio, or when the
# run failed. make bench and make bench-smoke (CI) run it.
#
# How a benchmark reports its floor; follow one of these, and the table
# and the checks pick the benchmark up with no change here:
#
#  1. Timed beside its floor in the same loop (the usual way): report the
#     floor's figure as FLOOR-UNIT, where FLOOR is one of $floors below
#     and UNIT what was measured (ns/op; p99-ns; rps), the ratio of
#     majlis's figure to it as x-FLOOR, and majlis's own figure as
#     majlis-UNIT (or NAME-UNIT, NAME saying what was timed:
#     admission-ns/op, mcp-ns/op; with no majlis-UNIT, the first such
#     metric in go's order, which is alphabetical, is taken):
#       b.ReportMetric(float64(ours)/n, "majlis-ns/op")
#       b.ReportMetric(float64(floor)/n, "etcd-ns/op")
#       b.ReportMetric(float64(ours)/float64(floor), "x-etcd")
#     A second ratio, for part of the work or another reading of it, is
#     PART-x-FLOOR beside PART-UNIT (gone-x-git and gone-ns/op). A ratio
#     of one statistic of several is x-FLOOR-STAT, comparing STAT-UNIT with
#     FLOOR-STAT-UNIT (x-idle-p99: p99-ns against idle-p99-ns). Checked: a
#     line with a FLOOR-... metric and no ratio x-FLOOR..., or with a
#     ratio and no floor's figure or none of its own, fails.
#     A comparison that a disk's write-back could decide (thousands of
#     files written) runs as fixtures.Pair, which reports medians this
#     way. A new kind of floor is added to $floors.
#  2. A floor benchmark of its own, BenchmarkFloorNAME, run apart from the
#     majlis benchmark it is the floor of: the two are listed in $pairs
#     with the metric compared (ns/op, p99-ns: ratio majlis/floor; a rate
#     ending in /s: floor/majlis, so that above 1 is always slower).
#     Checked: a BenchmarkFloor* not listed here fails, and so does one of
#     a pair present without the other.
#  3. No floor, an absolute goal: listed in $goals (a name pattern, the
#     metric, the goal), printed with no ratio.
#
# Figures in ns are printed in ms. The run itself fails the check when it
# shows a failed or panicking benchmark (--- FAIL, FAIL, panic:).
set -euo pipefail
file=${1:-bench.txt}
if [ ! -r "$file" ]; then
  echo "benchratio: cannot read $file (run make bench, or give the output of go test -bench)" >&2
  exit 2
fi

floors="git sqlite etcd cli version bare idle rm"
pairs=(
  "BenchmarkAcquireRelease BenchmarkFloorSyscalls ns/op"
  "BenchmarkAcquireReleaseContended4 BenchmarkFloorSyscallsContended4 total-ops/s"
  "BenchmarkLiveBusy BenchmarkFloorLive p99-ns"
)
goals=(
  "BenchmarkPeerCheck/(full/)?workspaces= ns/op under 20 ms"
  "BenchmarkConflictLookup10000 ns/op under 2 ms"
  "BenchmarkLiveBusy p99-ns under 10 ms, at most 2x idle"
)

join() { local IFS=';'; echo "$*"; }

awk -v floors="$floors" -v pairs="$(join "${pairs[@]}")" -v goals="$(join "${goals[@]}")" '
function isTime(u) { return u == "ns/op" || u == "ns" || u ~ /-ns(\/op)?$/ }
function show(v, u) { return isTime(u) ? sprintf("%.3f", v / 1e6) : sprintf("%.0f", v) }
function unitName(u) { return u ~ /ns\/op$/ ? "ms/op" : isTime(u) ? "ms" : u == "rps" ? "requests/s" : u }
function short(n) { sub(/^Benchmark/, "", n); return n }
function word(s) { sub(/-.*/, "", s); return s }
function isRatio(u) { return u ~ /^x-[a-z0-9]/ || index(u, "-x-") > 0 }
function row(name, a, b, r, note) {
  printf "%-50s %12s %12s %8s  %s\n", name, a, b, r, note
  rows++
}
function problem(s) { problems[++np] = s }
# ratio reads u, a ratio metric of line n, and prints its row.
function ratio(n, u,    p, rest, f, stat, v, j, s, ours, w, label) {
  if (u ~ /^x-/) { p = ""; rest = substr(u, 3) } else { p = substr(u, 1, index(u, "-x-") - 1); rest = substr(u, index(u, "-x-") + 3) }
  f = word(rest); stat = (rest == f) ? "" : substr(rest, length(f) + 2)
  v = ""
  for (j = 1; j <= nunits[n] && v == ""; j++)
    if (!isRatio(unit[n, j]) && index(unit[n, j], rest "-") == 1) v = unit[n, j]
  if (v == "") { problem(n ": reports " u " but not its floor'"'"'s figure " rest "-UNIT"); return }
  s = substr(v, length(rest) + 2)
  ours = ""
  if (p != "") {
    if ((n, p "-" s) in m) ours = p "-" s
  } else if (stat != "") {
    if ((n, stat "-" s) in m) ours = stat "-" s
  } else if ((n, "majlis-" s) in m) ours = "majlis-" s
  else for (j = 1; j <= nunits[n] && ours == ""; j++) {
    w = unit[n, j]
    if (!isRatio(w) && w != v && substr(w, length(w) - length(s)) == "-" s && !(word(w) in isFloor) && !((n, word(w)) in parts))
      ours = w
  }
  if (ours == "") { problem(n ": reports " u " but no figure of its own beside " v); return }
  label = p != "" ? " (" p ")" : stat != "" ? " (" stat ")" : ""
  row(short(n) label, show(m[n, ours], s), show(m[n, v], s), sprintf("%.2fx", m[n, u]), "(" unitName(s) ", against " f ")")
}

/^Benchmark/ && NF >= 4 && $2 ~ /^[0-9]+$/ {
  n = $1; sub(/-[0-9]+$/, "", n)
  if (!(n in seen)) { seen[n] = 1; order[++cnt] = n; nunits[n] = 0 }
  for (i = 3; i < NF; i += 2) {
    u = $(i + 1)
    if (!((n, u) in m)) unit[n, ++nunits[n]] = u
    m[n, u] = $i
    if (isRatio(u)) {
      if (u !~ /^x-/) parts[n, substr(u, 1, index(u, "-x-") - 1)] = 1
      r = u ~ /^x-/ ? substr(u, 3) : substr(u, index(u, "-x-") + 3)
      against[n, word(r)] = 1
    }
  }
  next
}
/^--- FAIL|^FAIL|^panic:/ { problem("the run failed: " $0) }

END {
  nf = split(floors, F, " "); for (i = 1; i <= nf; i++) isFloor[F[i]] = 1
  npairs = split(pairs, P, ";")
  for (i = 1; i <= npairs; i++) {
    split(P[i], w, " "); pOurs[i] = w[1]; pFloor[i] = w[2]; pUnit[i] = w[3]
    floorOf[w[2]] = i
  }
  ngoals = split(goals, G, ";")
  for (i = 1; i <= ngoals; i++) {
    g = G[i]; gRe[i] = substr(g, 1, index(g, " ") - 1); g = substr(g, index(g, " ") + 1)
    gUnit[i] = substr(g, 1, index(g, " ") - 1); gText[i] = substr(g, index(g, " ") + 1)
  }

  printf "\n%-50s %12s %12s %8s  %s\n", "benchmark", "majlis", "floor", "ratio", "(unit, floor)"
  for (k = 1; k <= cnt; k++) {
    n = order[k]
    top = n; sub(/\/.*/, "", top)
    if (top ~ /^BenchmarkFloor/ && !(top in floorOf))
      problem(n ": a floor benchmark that no pair in scripts/benchratio.sh names")
    # Rule 1: ratios reported by the benchmark itself.
    for (j = 1; j <= nunits[n]; j++) {
      u = unit[n, j]
      if (isRatio(u)) ratio(n, u)
      else if (u ~ /-/ && (word(u) in isFloor) && !((n, word(u)) in against))
        problem(n ": reports " u " (a figure of its floor) but no ratio x-" word(u))
    }
    # Rule 2: a majlis benchmark beside a floor benchmark of its own.
    for (i = 1; i <= npairs; i++) if (pOurs[i] == n) {
      if (!(pFloor[i] in seen)) { problem(n ": its floor " pFloor[i] " did not run"); continue }
      a = m[n, pUnit[i]]; b = m[pFloor[i], pUnit[i]]
      if (!((n, pUnit[i]) in m) || !((pFloor[i], pUnit[i]) in m) || a + 0 == 0 || b + 0 == 0) {
        problem(n ": no " pUnit[i] " beside its floor " pFloor[i]); continue
      }
      r = pUnit[i] ~ /\/s$/ ? b / a : a / b
      row(short(n), show(a, pUnit[i]), show(b, pUnit[i]), sprintf("%.2fx", r), "(" unitName(pUnit[i]) ", against " short(pFloor[i]) ")")
    }
    # Rule 3: an absolute goal.
    for (i = 1; i <= ngoals; i++) if (n ~ ("^" gRe[i] "[^/]*$") && (n, gUnit[i]) in m)
      row(short(n), show(m[n, gUnit[i]], gUnit[i]), "-", "-", "(" unitName(gUnit[i]) "; goal " gText[i] ")")
  }
  for (i = 1; i <= npairs; i++)
    if ((pFloor[i] in seen) && !(pOurs[i] in seen)) problem(pFloor[i] ": the benchmark it is the floor of, " pOurs[i] ", did not run")
  if (rows == 0) problem("no benchmark result in the output")
  for (i = 1; i <= np; i++) print "benchratio: " problems[i] > "/dev/stderr"
  exit np > 0
}' "$file"
