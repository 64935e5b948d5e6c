#!/usr/bin/env python3
# reports/bench_table.py — the replay-cost table of docs/scale.md, written
# from the rows `make bench` (section `section_scale`) leaves in
# build/bench.db, so the page's figures are the bench's and nothing else.
#
#   BENCH_SECTIONS=section_scale tests/bench.sh && python3 reports/bench_table.py
#
# Each cell is "wall s, peak RSS MiB" (and the results file's size for the
# --db rows) of the row's command; a cell the bench did not measure is "—".
# Exit 2 naming the database when it has no section_scale rows.
import argparse
import sqlite3
import sys
import urllib.parse

SIZES = [(10000, "10k"), (100000, "100k"), (1000000, "1M")]
CLUSTERS = [4, 8, 64]
SERVING = [
    ("disaggregated, kvcentric", "{n} req {p}P{p}D"),
    ("disaggregated, kvcentric, --db", "{n} req {p}P{p}D --db"),
    ("aggregated", "{n} req aggregated x{a}"),
    ("MEPIC (RAG trace)", "{n} rag req {p}P{p}D mepic"),
]


def rows(db):
    # the path quoted for SQLite's URI syntax (a ? or # in it would end the path)
    con = sqlite3.connect("file:" + urllib.parse.quote(db) + "?mode=ro", uri=True)
    try:
        got = con.execute("SELECT metric, value FROM bench WHERE bench = 'scale'").fetchall()
    finally:
        con.close()
    return dict(got)


def cell(r, label, with_db):
    wall, rss = r.get(f"{label} wall"), r.get(f"{label} peak RSS")
    if wall is None:
        return "—"
    text = f"{wall:.3f} s" + (f", {rss:.1f} MiB" if rss is not None else "")
    size = r.get(f"{label} size")
    if with_db and size is not None:
        text += f", DB {size:.0f} MiB"
    return text


def table(r):
    out = ["| serving | requests | 4P4D or 8 aggregated | 8P8D or 16 | 64P64D or 128 |", "|---|---|---|---|---|"]
    for name, pattern in SERVING:
        for n, short in SIZES:
            cells = [cell(r, pattern.format(n=n, p=p, a=2 * p), "--db" in pattern) for p in CLUSTERS]
            out.append(f"| {name} | {short} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description="Print docs/scale.md's replay-cost table from make bench's rows.")
    ap.add_argument("--db", default="build/bench.db", help="the bench database (default build/bench.db)")
    args = ap.parse_args()
    try:
        r = rows(args.db)
    except sqlite3.Error as e:
        print(f"bench_table: {args.db}: {e}; run `BENCH_SECTIONS=section_scale tests/bench.sh` first",
              file=sys.stderr)
        return 2
    if not r:
        print(f"bench_table: {args.db}: no section_scale rows; run `BENCH_SECTIONS=section_scale tests/bench.sh`",
              file=sys.stderr)
        return 2
    print(table(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
