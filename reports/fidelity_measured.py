#!/usr/bin/env python3
"""The tables of docs/fidelity-measured.md, regenerated: each cell is the
engine model's figure ("old", --set cost.compute=engine) against the
default's ("new", cost.compute=auto, which takes a preset's measured
tables), as the page prints it.

    python3 reports/fidelity_measured.py offload    # section 2, LMCache CPU offload
    python3 reports/fidelity_measured.py load       # section 3, the load rules
    python3 reports/fidelity_measured.py pairs      # section 5, two H100s split or not
    python3 reports/fidelity_measured.py mepic      # section 6, MEPIC, EPIC, CacheBlend
    python3 reports/fidelity_measured.py plan       # section 7, sizing LMCache's CPU DRAM

Each runs build/kvsim (sweeps of docs/lmcache.md's multi-round QA trace,
made here as build/fm-mqa20k.jsonl) into build/fm-*.db and prints the
table's rows. The docs check them against the page (`make test`)."""
import argparse
import json
import os
import sqlite3
import subprocess

KVSIM = "build/kvsim"  # as the page's commands run it (in make test, a scratch folder's link)
TRACE = "build/fm-mqa20k.jsonl"
MODES = (("old", "engine"), ("new", "auto"))


def sh(args):
    subprocess.run([KVSIM] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def trace():
    if not os.path.exists(TRACE):
        sh(["trace", "gen", "--workload", "multiround-qa", "--doc-tokens", "20000", "-o", TRACE])


def sweep(preset, grid, mode):
    """The runs of one sweep: {(config values of the grid's keys): summary}."""
    db = "build/fm-%s-%s.db" % (preset, mode)
    if os.path.exists(db):
        os.remove(db)
    sh(["sweep", "--trace", TRACE, "--config", "configs/clusters/lmcache-%s.json" % preset, "--set",
        "slo.ttft_ms=2000", "--set", "cost.compute=" + mode, "--jobs", "2", "--db", db, "--grid", grid])
    keys = [part.split("=")[0] for part in grid.split(";")]
    out = {}
    with sqlite3.connect(db) as con:
        for cfg, summ in con.execute("SELECT config_json, summary_json FROM runs"):
            c = json.loads(cfg)
            vals = []
            for k in keys:
                v = c
                for part in k.split("."):
                    v = v[part]
                vals.append(v)
            out[tuple(vals)] = json.loads(summ)
    return out


def minus(text):
    return text.replace("-", "\u2212")


def cell(old, new, fmt="{:,.0f}"):
    return minus("%s \u2192 %s (%+.0f%%)" % (fmt.format(old), fmt.format(new), 100 * (new / old - 1)))


def row(label, cells):
    print("| %s | %s |" % (label, " | ".join(cells)))


def offload():
    grid = "kvstore.lmcache=false,true;kvstore.transfer=chunk,page;trace.speed=0.25,0.5,1,2,3,4"
    old, new = (sweep("cpu-offload", grid, m) for _, m in MODES)
    speeds = (0.25, 0.5, 1, 2, 3, 4)
    for label, lm, tr in (("GPU prefix cache only", False, "chunk"), ("page copies", True, "page"),
                          ("LMCache chunks", True, "chunk")):
        row(label, [cell(old[(lm, tr, s)]["ttft_ms"]["mean"], new[(lm, tr, s)]["ttft_ms"]["mean"]) for s in speeds])


def load():
    grid = "kvstore.load=always,never,adaptive,balanced;trace.speed=0.25,0.5,1,2,3,4"
    runs = {p: [sweep(p, grid, m) for _, m in MODES] for p in ("central-storage", "local-disk")}
    speeds = (0.25, 0.5, 1, 2, 4)
    for label, preset, rule in (("remote store, `always`", "central-storage", "always"),
                                ("remote store, `balanced`", "central-storage", "balanced"),
                                ("local disk, `always`", "local-disk", "always"),
                                ("local disk, `balanced`", "local-disk", "balanced"),
                                ("no store (`never`)", "local-disk", "never")):
        old, new = runs[preset]
        row(label, [cell(old[(rule, s)]["ttft_ms"]["mean"], new[(rule, s)]["ttft_ms"]["mean"]) for s in speeds])


def run_json(args):
    out = subprocess.run([KVSIM, "run", "--json"] + args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def pairs():
    base = ["--config", "configs/clusters/lmcache-cpu-offload.json", "--set", 'trace.path="%s"' % TRACE, "--set",
            "kvstore.lmcache=false"]
    split = ["--set", 'cluster.mode="disaggregated"', "--set", "cluster.prefill=1", "--set", "cluster.decode=1",
             "--set", 'kvstore.dram_bytes="500GB"']
    for speed in ("0.5", "1"):
        for label, extra in (("1 prefill + 1 decode", split), ("2 aggregated", ["--set", "cluster.instances=2"])):
            o, n = (run_json(base + extra + ["--set", "trace.speed=" + speed, "--set", "cost.compute=" + m])
                    for m in ("engine", "measured"))
            cells = [cell(o[k][q], n[k][q], "{:,.1f}") for k, q in (("ttft_ms", "mean"), ("ttft_ms", "p99"),
                                                                     ("tbt_ms", "mean"), ("tbt_ms", "p99"))]
            cells.append("%.3f \u2192 %.3f" % (o["slo_attainment"], n["slo_attainment"]))
            row(label, [speed] + cells)


PIC = ["--set", "model=llama3.1-8b", "--set", "hardware=h100x1", "--set", "hardware.hbm_bytes_per_gpu=64e9", "--set",
       "cluster.mode=aggregated", "--set", "cluster.instances=1"]


def pic_traces():
    """docs/pic-mepic.md's traces, under names of their own (that page makes
    build/rag200.jsonl and the rest at the same time in make test)."""
    gen = ["trace", "gen", "--workload", "rag", "--requests", "200", "--seed", "7"]
    for name, extra in (("rag200", ["--rate", "1"]), ("k16", ["--rate", "15", "--k", "16"]),
                        ("k10", ["--rate", "15", "--k", "10"]),
                        ("newsqa", ["--rate", "15", "--k", "5", "--passage-mean", "280", "--passages", "600", "--zipf",
                                    "0.6"])):
        sh(gen + extra + ["-o", "build/fm-%s.jsonl" % name])
    sh(["trace", "import", "ragpulse", "traces/ragpulse-sample", "-o", "build/fm-ragpulse.jsonl"])


def pic_runs(mode):
    """{(trace, speed, policy): summary} of the three sweeps, one mode."""
    db = "build/fm-mepic-%s.db" % mode
    if os.path.exists(db):
        os.remove(db)
    pics = "kvstore.pic=epic,cacheblend,mepic"
    common = PIC + ["--set", "cost.compute=" + mode, "--db", db]
    sh(["sweep", "--trace", "build/fm-rag200.jsonl", "--grid", pics + ";trace.speed=2,10,25"] + common)
    sh(["sweep", "--grid", pics + ";trace.path=" + ",".join("build/fm-%s.jsonl" % t for t in ("k16", "k10", "newsqa"))]
       + common)
    sh(["sweep", "--trace", "build/fm-ragpulse.jsonl", "--set", "trace.speed=1232.6", "--grid", pics] + common)
    out = {}
    with sqlite3.connect(db) as con:
        for cfg, summ in con.execute("SELECT config_json, summary_json FROM runs"):
            c = json.loads(cfg)
            name = os.path.basename(c["trace"]["path"])[3:-6]
            out[(name, c["trace"]["speed"], c["kvstore"]["pic"])] = json.loads(summ)
    return out


def mepic():
    pic_traces()
    o, n = pic_runs("engine"), pic_runs("auto")
    e2e = lambda r, t, s, p: r[(t, s, p)]["e2e_ms"]["mean"]
    vs = lambda r, t, s, p: 100 * (e2e(r, t, s, "mepic") / e2e(r, t, s, p) - 1)
    peak = lambda r, t, s: r[(t, s, "epic")]["peak_footprint_bytes"] / r[(t, s, "mepic")]["peak_footprint_bytes"]
    for label, t, s, qps in (("rag200", "rag200", 2, 2), ("rag200", "rag200", 10, 10), ("rag200", "rag200", 25, 25),
                             ("k16", "k16", 1, 15), ("k10 (SQuAD-like)", "k10", 1, 15), ("newsqa", "newsqa", 1, 15),
                             ("ragpulse", "ragpulse", 1232.6, 15)):
        row(label, ["%g" % qps, cell(e2e(o, t, s, "epic"), e2e(n, t, s, "epic")),
                    cell(e2e(o, t, s, "mepic"), e2e(n, t, s, "mepic")),
                    minus("%+.1f%% \u2192 %+.1f%%" % (vs(o, t, s, "epic"), vs(n, t, s, "epic"))),
                    minus("%+.1f%% \u2192 %+.1f%%" % (vs(o, t, s, "cacheblend"), vs(n, t, s, "cacheblend"))),
                    "%.2f\u00d7 \u2192 %.2f\u00d7" % (peak(o, t, s), peak(n, t, s))])
    print("(k10's peak: %d \u2192 %d for EPIC)" % (o[("k10", 1, "epic")]["peak_inflight_requests"],
                                                  n[("k10", 1, "epic")]["peak_inflight_requests"]))


def gb(point):
    return "%g GB" % (point["dram_bytes"] / 1e9)


def point_text(point):
    n = point["instances"]
    return "%d instance%s, %s" % (n, "" if n == 1 else "s", gb(point))


def plan():
    o, n = (json.loads(subprocess.run([KVSIM, "plan", "slo", "--config", "configs/clusters/lmcache-cpu-offload.json",
                                       "--trace", TRACE, "--speed", "2", "--ttft-p90-ms", "2000", "--jobs", "2",
                                       "--set", "cost.compute=" + m, "--json"], check=True, capture_output=True,
                                      text=True).stdout) for _, m in MODES)
    fl = [(x["floor"]["cpp"][0]["floor"]["ttft_ms.p90"], x["floor"]["prompt_alone_ms"]) for x in (o, n)]
    row("floor: TTFT p90 / the p90 prompt alone",
        [minus("%.1f \u2192 %.1f ms (%+.0f%%) / %s" % (fl[0][0], fl[1][0], 100 * (fl[1][0] / fl[0][0] - 1),
                                                       cell(fl[0][1], fl[1][1], "{:,.1f}").replace(" (", " ms (")))])
    row("cliff with 1 instance: passes / fails",
        ["%s \u2192 %s / %s \u2192 %s" % (gb(o["cliff"]["pass"]), gb(n["cliff"]["pass"]), gb(o["cliff"]["fail"]),
                                          gb(n["cliff"]["fail"]))])
    ch = [x["cheapest"]["ttft_ms"] for x in (o, n)]
    row("cheapest point's TTFT p90 / mean", [
        "%s / %s" % (cell(ch[0]["p90"], ch[1]["p90"], "{:,.1f}").replace(" (", " ms ("),
                     cell(ch[0]["mean"], ch[1]["mean"], "{:,.1f}").replace(" (", " ms ("))])
    at = [[f["instances"] for f in x["frontier"] if f["dram_bytes"] == 62.5e9][0] for x in (o, n)]
    row("at 62.5 GB per instance", ["%d instances \u2192 %d" % (at[0], at[1])])
    rec = [x["confirmation"]["recommended"]["point"] for x in (o, n)]
    row("recommended (after the 8 confirmations)", ["%s \u2192 %s" % (point_text(rec[0]), point_text(rec[1]))])
    c = [x["confirmation"]["candidates"][0] for x in (o, n)]
    print("the cliff's point passes %d of its %d confirmations" % (c[0]["pass"], c[0]["confirmations"]))
    print("passes %d of %d, %.0f%% of the target to spare" %
          (c[1]["pass"], c[1]["confirmations"], 100 * c[1]["margin_ms"]["ttft_ms.p90"] / 2000))


def main():
    what = {"offload": offload, "load": load, "pairs": pairs, "mepic": mepic, "plan": plan}
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("section", choices=list(what),
                    help="the table: offload (section 2), load (3), pairs (5), mepic (6) or plan (7)")
    args = ap.parse_args()
    trace()
    what[args.section]()


if __name__ == "__main__":
    main()
