#!/usr/bin/env bash
# Prints each majlis benchmark beside its floor and the ratio, from the
# output of `go test -bench`. Pairs are listed here: majlis benchmark, floor.
set -euo pipefail
file=${1:-bench.txt}
pairs=(
  "BenchmarkAcquireRelease BenchmarkFloorSyscalls ns/op"
  "BenchmarkAcquireReleaseContended4 BenchmarkFloorSyscallsContended4 total-ops/s"
)
metric() { # name unit
  awk -v name="$1" -v unit="$2" '
    { n=$1; sub(/-[0-9]+$/, "", n) }
    n==name { for (i=2;i<NF;i++) if ($(i+1)==unit) { print $i; exit } }' "$file"
}
printf '\n%-40s %14s %14s %8s\n' "benchmark / floor" "majlis" "floor" "ratio"
for p in "${pairs[@]}"; do
  read -r ours floor unit <<<"$p"
  a=$(metric "$ours" "$unit"); b=$(metric "$floor" "$unit")
  [ -n "$a" ] && [ -n "$b" ] || continue
  if [ "$unit" = "ns/op" ]; then r=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2fx", a/b}')
  else r=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2fx", b/a}'); fi # rates: floor/ours = slowdown
  printf '%-40s %14s %14s %8s  (%s)\n' "${ours#Benchmark}" "$a" "$b" "$r" "$unit"
done

# Benchmarks that time majlis and plain git alternately report both and
# their ratio themselves (majlis-ns/op, git-ns/op, x-git).
awk '/ x-git/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="majlis-ns/op") m=$i; if ($(i+1)=="git-ns/op") g=$i; if ($(i+1)=="x-git") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op, against plain git)\n", name, m, g, r
}' "$file"

# Reclaim also reports the moment its workspace was gone from its path
# (gone-ns/op, gone-x-git), before the trash is deleted.
awk '/gone-x-git/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="gone-ns/op") m=$i; if ($(i+1)=="git-ns/op") g=$i; if ($(i+1)=="gone-x-git") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op until gone from its path, against plain git)\n", name " (gone)", m, g, r
}' "$file"

# Admission is measured beside a bare SQLite transaction doing the same
# writes with the same pragmas (admission-ns/op, sqlite-ns/op, x-sqlite).
awk '/x-sqlite/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="admission-ns/op") m=$i; if ($(i+1)=="sqlite-ns/op") g=$i; if ($(i+1)=="x-sqlite") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op, against bare SQLite)\n", name, m, g, r
}' "$file"

# Shared admission on etcd is measured beside one bare etcd transaction
# putting the same keys on the same server (admission-ns/op, etcd-ns/op,
# x-etcd).
awk '/x-etcd/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="admission-ns/op") m=$i; if ($(i+1)=="etcd-ns/op") g=$i; if ($(i+1)=="x-etcd") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op, against a bare etcd transaction)\n", name, m, g, r
}' "$file"

# Benchmarks with an absolute goal and no floor: the time per operation.
awk '/^Benchmark(PeerCheck\/(full\/)?workspaces|ConflictLookup)/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  printf "%-40s %14.0f %14s %8s  (ns/op)\n", name, $3, "-", "-"
}' "$file"

# The server: attach to a running server against a bare process start
# (majlis version), and liveness latency with the handler pool full
# against the same server idle (goal: p99 at most 2x idle, under 10 ms).
awk '/x-version/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="attach-ns/op") m=$i; if ($(i+1)=="version-ns/op") g=$i; if ($(i+1)=="x-version") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op, against majlis version)\n", name, m, g, r
}' "$file"
awk '/p99-ns/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="p50-ns") p50=$i; if ($(i+1)=="p99-ns") p99=$i }
  goal = (name == "LiveBusy") ? ", pool full; goal p99 < 10000000" : "; the floor: a bare server, same process"
  printf "%-40s %14.0f %14.0f %8s  (p50 and p99 ns%s)\n", name, p50, p99, "-", goal
}' "$file"
awk '/x-idle-p99/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="p99-ns") b=$i; if ($(i+1)=="idle-p99-ns") d=$i; if ($(i+1)=="x-idle-p99") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (p99 ns with the pool full, against the same server idle; goal <= 2x)\n", name " (p99)", b, d, r
}' "$file"
# Requests per second of a cheap authenticated route through the server,
# 64 clients, against a bare net/http handler doing the same library call
# (server-rps, bare-rps, x-bare: bare/server).
awk '/x-bare/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="server-rps") m=$i; if ($(i+1)=="bare-rps") g=$i; if ($(i+1)=="x-bare") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (requests/s, 64 clients, against a bare net/http handler)\n", name, m, g, r
}' "$file"

# The server's API: a lease acquire through the running server against the
# CLI (server-ns/op, cli-ns/op, x-cli), and an allocation split into HTTP
# and library time beside git (api-ns/op, lib-ns/op, http-ns/op, git-ns/op).
awk '/x-cli/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="server-ns/op") m=$i; if ($(i+1)=="cli-ns/op") g=$i; if ($(i+1)=="x-cli") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op, against the CLI)\n", name, m, g, r
}' "$file"
awk '/lib-per-git/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="api-ns/op") a=$i; if ($(i+1)=="lib-ns/op") l=$i; if ($(i+1)=="http-ns/op") h=$i; if ($(i+1)=="git-ns/op") g=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op through the route, against plain git)\n", name, a, g, a/g
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op of the library call alone; HTTP and JSON: %.0f ns/op)\n", name " (library)", l, g, l/g, h
}' "$file"

# Allocation through the server also reports the floor any allocation with
# durable records has: git plus five synced record writes (floor-x-git).
awk '/floor-x-git/ {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  for (i=2;i<NF;i++) { if ($(i+1)=="records-ns/op") m=$i; if ($(i+1)=="git-ns/op") g=$i; if ($(i+1)=="floor-x-git") r=$i }
  printf "%-40s %14.0f %14.0f %7.2fx  (ns/op of five synced record writes, and git plus them against git)\n", name " (floor)", m, g, r
}' "$file"
