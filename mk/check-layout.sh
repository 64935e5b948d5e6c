#!/usr/bin/env bash
# mk/check-layout.sh — the layer rule and the no-circles rule, checked.
#
#   mk/check-layout.sh BUILD_DIR     (make check-layout; part of make test)
#
# 1. Layers: every #include "x/y.h" of a file in room R (its folder) names a
#    header of R itself or of a room that mk/layers.txt lists for R.
# 2. Circles: over the graph of files — a source file points to each header
#    it includes and to each source file defining a function or object it
#    uses (read from the objects in BUILD_DIR with nm) — there is no cycle.
#    A header does not point to its source file: calling through a header is
#    a dependency on the file that implements it, and a registry table that
#    names the implementations of an interface is not a cycle with them.
#    The layer table itself must have no circle among rooms either.
# 3. Command files stay thin: at most 350 lines of code each (below).
# Prints each violation and exits 1; prints a one-line tally when clean.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
layers=${KVSIM_LAYERS:-mk/layers.txt} # tests point it at a changed copy
srcs=$(find sim sched reports datapath kernels -name '*.[ch]' -o -name '*.cu' | sort)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0

# ---- 1. layers ------------------------------------------------------------
grep -v '^#' "$layers" | awk 'NF' >"$tmp/table"
# One grep over every file (a process per file made this the slow part).
# shellcheck disable=SC2086
{ grep -H -o '^#include "[^"]*"' $srcs || true; } | sed 's/^\([^:]*\):#include "\(.*\)"$/\1 \2/' >"$tmp/includes"
awk -v table="$tmp/table" '
  function dir(p) { sub(/\/[^\/]*$/, "", p); return p }
  BEGIN { while ((getline l < table) > 0) { n = split(l, w, " "); known[w[1]] = 1
            for (i = 2; i <= n; i++) ok[w[1] " " w[i]] = 1 } }
  { r = dir($1); h = dir($2)
    if (!(r in known)) { if (!(r in said)) print "layout: room " r " (" $1 ") is not in mk/layers.txt"; said[r] = 1; bad = 1; next }
    if (h != r && !((r " " h) in ok)) { print "layout: " $1 " includes " $2 ": room " r " may not include room " h; bad = 1 } }
  END { exit bad }' "$tmp/includes" || bad=1

# The rule itself has no circle: no room may include, through any chain, a
# room that may include it.
awk '{ for (i = 2; i <= NF; i++) if ($i != "-") print $1, $i }' "$tmp/table" >"$tmp/room-edges"
if ! tsort "$tmp/room-edges" >/dev/null 2>"$tmp/room-loops"; then
  echo "layout: mk/layers.txt has a circle among rooms:"; sed 's/^/  /' "$tmp/room-loops"; bad=1
fi

# ---- 2. circles -------------------------------------------------------------
awk '{ print $1, $2 }' "$tmp/includes" >"$tmp/edges"
objs=()
for f in $srcs; do
  case $f in *.c) o="$build/${f%.c}.o" ;; *.cu) o="$build/${f%.cu}.o" ;; *) continue ;; esac
  if [ ! -f "$o" ]; then
    case $f in *.cu) continue ;; esac # built only where nvcc exists
    echo "layout: $o missing (build first)" >&2; bad=1; continue
  fi
  objs+=("$o") && printf '%s %s\n' "$o" "$f" >>"$tmp/objsrc"
done
# Two nm runs over all objects (-A: each line names its object), mapped
# back to source files.
if [ ${#objs[@]} -gt 0 ]; then
  { nm -A --defined-only -g "${objs[@]}" | awk '{ sub(/:.*/, "", $1) } NF == 3 { print "D", $3, $1 }'
    nm -A -u "${objs[@]}" | awk '{ sub(/:.*/, "", $1); print "U", $NF, $1 }'
  } | awk -v map="$tmp/objsrc" 'BEGIN { while ((getline l < map) > 0) { split(l, w, " "); src[w[1]] = w[2] } }
        { print $1, $2, src[$3] }' >"$tmp/symbols"
else : >"$tmp/symbols"; fi
awk '$1 == "D" { def[$2] = $3; next }
     $1 == "U" && ($2 in def) && def[$2] != $3 { print $3, def[$2] }' \
  <(grep '^D' "$tmp/symbols"; grep '^U' "$tmp/symbols") | sort -u >>"$tmp/edges"
if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loops"; then
  echo "layout: circles among files (each block is one cycle):"
  sed -n 's/^tsort: .*: input contains a loop:/  cycle:/p; s/^tsort: \(.*\)$/    \1/p' "$tmp/loops" | grep -v 'input contains' || true
  bad=1
fi

files=$(echo "$srcs" | wc -l)
rooms=$(wc -l <"$tmp/table")
edges=$(wc -l <"$tmp/edges")
# ---- 3. thin command files -------------------------------------------------
# A command file (sim/cli/cmd_*.c) parses, calls and prints: at most
# CMD_MAX_CODE lines of code, not counting blank lines, comments and the
# lines of its --help text (lines that start with a string literal). What
# grows past that is logic, and belongs in the room below (sim/trace,
# sim/slo, ...).
CMD_MAX_CODE=${KVSIM_CMD_MAX_CODE:-350}
for f in sim/cli/cmd_*.c; do
  n=$(grep -cvE '^[[:space:]]*("|$|/\*|\*|//)' "$f" || true)
  if [ "$n" -gt "$CMD_MAX_CODE" ]; then
    echo "layout: $f has $n lines of code (blank, comment and --help lines aside), over $CMD_MAX_CODE: move its logic into the room it calls"
    bad=1
  fi
done

[ "$bad" -eq 0 ] && echo "layout: $files files in $rooms rooms, $edges include/call edges, 0 layer violations, 0 circles, command files within $CMD_MAX_CODE lines of code"
exit "$bad"
