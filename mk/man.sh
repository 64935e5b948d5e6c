#!/usr/bin/env bash
# mk/man.sh — write the kvsim(1) man page (docs/kvsim.1) from the program's
# own --help texts, so the two cannot disagree: `kvsim --help` gives the
# command list, each `kvsim COMMAND --help` (and the second-level commands of
# trace, plan and model) a section. tests/test_docs.c fails when docs/kvsim.1
# differs from what this prints; `make man` rewrites it.
#
#   mk/man.sh [-o FILE]    (default: standard output; KVSIM= the binary)
set -euo pipefail
cd "$(dirname "$0")/.."
KVSIM=${KVSIM:-build/kvsim}
out=/dev/stdout
[ "${1:-}" = -o ] && out=$2

# roff-safe text: backslashes escaped, a leading dot or quote neutralised.
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

section() { # title, then the help text on stdin, as a no-fill block
  printf '.SS %s\n.nf\n' "$1"
  esc
  printf '.fi\n'
}

commands=$("$KVSIM" --help | awk '/^commands:/ { on = 1; next } on && NF { print $1 }')
{
  printf '.TH KVSIM 1 "" "kvsim" "User Commands"\n'
  printf '.SH NAME\nkvsim \\- trace-driven simulator of KV-cache-centric LLM serving\n'
  printf '.SH SYNOPSIS\n.B kvsim\n.I COMMAND\n[\\fIoptions\\fR]\n'
  printf '.SH DESCRIPTION\n.nf\n'
  "$KVSIM" --help | esc
  printf '.fi\n.SH COMMANDS\n'
  for c in $commands; do
    "$KVSIM" "$c" --help | section "kvsim $c"
    case $c in
      trace) subs="stats gen import rechunk" ;;
      plan) subs="slo crossover" ;;
      model) subs="import" ;;
      *) subs="" ;;
    esac
    for s in $subs; do "$KVSIM" "$c" "$s" --help | section "kvsim $c $s"; done
  done
  printf '.SH EXIT STATUS\n0 ok; 2 bad arguments, config or input (the message names the file, line, key or value); 1 internal error; 3 a\n.B kvsim check\nregression.\n'
  printf '.SH FILES\nPresets in configs/ beside the binary, or PREFIX/share/kvsim/configs after make install; bundled traces in traces/.\n'
  printf 'Parsed measured tables (configs/optables) are cached in $KVSIM_CACHE_DIR, else $XDG_CACHE_HOME/kvsim, else ~/.cache/kvsim; files untouched for a week are removed.\n'
  printf '.SH ENVIRONMENT\n.TP\n.B KVSIM_CACHE_DIR\nWhere parsed measured tables are kept between runs; set empty, none are kept (docs/measured.md section 7).\n'
  printf '.SH SEE ALSO\nThe documentation pages in docs/ of the source tree, starting with README.md.\n'
} >"$out"
