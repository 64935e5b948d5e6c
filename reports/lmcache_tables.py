#!/usr/bin/env python3
"""reports/lmcache_tables.py — the tables of docs/lmcache-load.md §3 (and
docs/fidelity-measured.md §3's "new" column) from the sweeps' results
databases: for each preset, mean TTFT (ms) / SLO attainment of every
`kvstore.load` rule at every `trace.speed`.

    python3 reports/lmcache_tables.py [--db-dir build] [--presets cpu-offload,local-disk,central-storage]

Reads DIR/lmc-load-PRESET.db, written by docs/lmcache-load.md §3's loop
(`kvsim sweep ... --db build/lmc-load-PRESET.db`); prints one Markdown
table a preset. Standard library only.
"""
import argparse
import json
import os
import sqlite3
import sys

RULES = ("always", "never", "adaptive", "balanced")
TITLES = {"cpu-offload": "CPU offload", "local-disk": "Local disk", "central-storage": "Central storage (15 Gbps)"}


def rows(path):
    """{(rule, speed): (mean TTFT ms, attainment)} of one sweep."""
    if not os.path.exists(path):
        sys.exit("lmcache_tables.py: %s: no such database (run docs/lmcache-load.md section 3's sweep first)" % path)
    db = sqlite3.connect(path)
    out = {}
    for cfg, summ in db.execute("SELECT config_json, summary_json FROM runs"):
        c, s = json.loads(cfg), json.loads(summ)
        key = (c["kvstore"]["load"], c["trace"]["speed"])
        out[key] = (s["ttft_ms"]["mean"], s["slo_attainment"])
    return out


def table(title, r):
    speeds = sorted({s for _, s in r})
    lines = [title + ":", "", "| speed | " + " | ".join(RULES) + " |", "|---" * (len(RULES) + 1) + "|"]
    for sp in speeds:
        cells = ["%s / %.3f" % (format(round(r[(rule, sp)][0]), ","), r[(rule, sp)][1]) for rule in RULES]
        lines.append("| %g | %s |" % (sp, " | ".join(cells)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db-dir", default="build", help="where the lmc-load-PRESET.db files are (default: %(default)s)")
    ap.add_argument("--presets", default="cpu-offload,local-disk,central-storage")
    a = ap.parse_args()
    out = [table(TITLES.get(p, p), rows(os.path.join(a.db_dir, "lmc-load-%s.db" % p))) for p in a.presets.split(",")]
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
