#!/usr/bin/env python3
"""reports/optables_bundle.py — bundle NVIDIA AIConfigurator's measured
per-operation vLLM latency tables (Apache-2.0) into configs/optables/SYSTEM/
for `cost.compute = measured` (issue 46, docs/hardware.md).

Input: the tables as published in `../shared/optables` (one folder per GPU
system: SYSTEM.yaml, then OPERATION/FRAMEWORK/VERSION/TABLE_perf.csv.gz and
collection_meta.yaml; see its README.md). Output, per system:

  gemm.csv.gz, context_attention.csv.gz, generation_attention.csv.gz,
  moe.csv.gz, custom_allreduce.csv.gz, and where present context_mla.csv.gz,
  generation_mla.csv.gz, nccl.csv.gz: the collector's header and columns
  unchanged (a reader maps columns by header name), values as written;
  SYSTEM.yaml copied unchanged (it carries the SPDX header);
  meta.json: device, engine, the system description's numbers, the files,
  their row counts, the provenance and what was filtered out.

Rows are only filtered, to keep the bundle small: GEMM and MoE rows whose
dtype (gemm_dtype / moe_dtype) is bfloat16 or fp8, attention rows whose
attn_dtype is bfloat16 (any kv_cache_dtype), MLA rows whose mla_dtype is
bfloat16, every collective row. Rows are sorted by their columns in header
order (numbers numerically, latency last), and the gzip streams carry no
name and mtime 0, so a rerun writes byte-identical files.

A table whose columns differ from the h100_sxm table of the same operation
(b200_sxm's MLA is measured as whole modules, mla_context_module_perf /
mla_generation_module_perf, with model, architecture and gemm_type columns)
is bundled under its own table name less `_perf` and said so in meta.json.

Block-quantized FP8 (issue 46: DeepSeek-V3's checkpoint, weights in 128x128
blocks): on the systems whose presets hold such a model on one node and
have MLA tables (BLOCK_SYSTEMS), the rows of gemm_dtype / moe_dtype
fp8_block that the model presets with "weight_quant": "fp8_block" use at
tensor-parallel degrees 1, 2, 4 and 8 are bundled in files of their own,
gemm_fp8_block.csv.gz and moe_fp8_block.csv.gz (the other files stay as
they were): for each GEMM the model runs (fused q_a/kv_a, q_b, o, dense and
shared-expert MLPs), the measured (n, k) pairs that bracket it; the fused
MoE rows of its hidden size, expert intermediate, top-k and experts at
every TP x EP split of at most 8 GPUs.

usage: python3 reports/optables_bundle.py [--src ../shared/optables]
           [--out configs/optables] [--systems h100_sxm,...]
Standard library only.
"""
import argparse
import csv
import gzip
import io
import json
import os
import shutil
import sys

SYSTEMS = ("h100_sxm", "h200_sxm", "a100_sxm", "l40s", "b200_sxm", "gb200")
REFERENCE = "h100_sxm"  # whose column sets the other systems' tables are compared with

# (operation folder, collector table) -> bundled name; the keep rule per name.
TABLES = {
    ("gemm", "gemm_perf"): "gemm",
    ("attention", "context_attention_perf"): "context_attention",
    ("attention", "generation_attention_perf"): "generation_attention",
    ("moe", "moe_perf"): "moe",
    ("comm", "custom_allreduce_perf"): "custom_allreduce",
    ("comm", "nccl_perf"): "nccl",
    ("mla", "context_mla_perf"): "context_mla",
    ("mla", "generation_mla_perf"): "generation_mla",
    # b200_sxm (vLLM 0.19.0) measures MLA as modules; same slot when the columns match.
    ("mla", "mla_context_module_perf"): "context_mla",
    ("mla", "mla_generation_module_perf"): "generation_mla",
}
ORDER = ("gemm", "context_attention", "generation_attention", "moe", "custom_allreduce", "context_mla",
         "generation_mla", "nccl")
# Block-quantized FP8 rows: the systems, the model presets and TP degrees they are for.
BLOCK_SYSTEMS = ("h200_sxm", "b200_sxm")
BLOCK_TPS = (1, 2, 4, 8)
MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "models")
KEEP = {
    "gemm": ("gemm_dtype", ("bfloat16", "fp8")),
    "moe": ("moe_dtype", ("bfloat16", "fp8")),
    "context_attention": ("attn_dtype", ("bfloat16",)),
    "generation_attention": ("attn_dtype", ("bfloat16",)),
    "context_mla": ("mla_dtype", ("bfloat16",)),
    "generation_mla": ("mla_dtype", ("bfloat16",)),
}
GPU_KEYS = ("mem_bw", "mem_bw_empirical_scaling_factor", "mem_empirical_constant_latency", "mem_capacity",
            "bfloat16_tc_flops", "fp8_tc_flops", "sm_version")
NODE_KEYS = ("num_gpus_per_node", "intra_node_bw", "inter_node_bw", "pcie_bw", "p2p_latency")


def yaml_scalar(text):
    """One scalar of the block-style YAML subset the system files use."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "null": None, "~": None}.get(text, text)


def strip_comment(line):
    """The line less a `#` comment outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def parse_yaml(path):
    """Nested mappings of scalars by indentation (all AIConfigurator's system
    and collection_meta files use); comments dropped; keys stay strings."""
    root = {}
    stack = [(-1, root)]
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = strip_comment(raw.rstrip("\n")).rstrip()
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip(" "))
            key, sep, value = line.strip().partition(":")
            if not sep:
                raise ValueError(f"{path}: not a 'key: value' line: {raw.rstrip()}")
            key = str(yaml_scalar(key))
            while indent <= stack[-1][0]:
                stack.pop()
            parent = stack[-1][1]
            if value.strip():
                parent[key] = yaml_scalar(value)
            else:
                parent[key] = {}
                stack.append((indent, parent[key]))
    return root


def sort_key(row, latency):
    """Every column in header order, numbers numerically before words, then latency."""
    key = []
    for i, v in enumerate(row):
        if i == latency:
            continue
        try:
            key.append((0, float(v), ""))
        except ValueError:
            key.append((1, 0.0, v))
    key.append((0, float(row[latency]), ""))
    return key


def read_table(path):
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write_gzip_csv(path, header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            gz.write(buf.getvalue().encode("utf-8"))


def find_tables(sysdir):
    """(operation, framework, version, table, path) of every table of a system, sorted."""
    found = []
    for op in sorted(os.listdir(sysdir)):
        opdir = os.path.join(sysdir, op)
        if not os.path.isdir(opdir):
            continue
        for fw in sorted(os.listdir(opdir)):
            for ver in sorted(os.listdir(os.path.join(opdir, fw))):
                vdir = os.path.join(opdir, fw, ver)
                for name in sorted(os.listdir(vdir)):
                    if name.endswith("_perf.csv.gz"):
                        found.append((op, fw, ver, name[: -len(".csv.gz")], os.path.join(vdir, name)))
    return found


def block_models():
    """The model presets whose weights are block-quantized FP8, by name."""
    models = {}
    for fname in sorted(os.listdir(MODELS_DIR)):
        if fname.endswith(".json"):
            with open(os.path.join(MODELS_DIR, fname), encoding="utf-8") as f:
                m = json.load(f)
            if m.get("weight_quant") == "fp8_block":
                models[m["name"]] = m
    return models


def block_gemms(m, tp):
    """(n, k) of each block-quantized GEMM one layer of model m runs on one of
    tp GPUs (sim/cost/measured.c): MLA's fused q_a/kv_a projection
    (replicated), q_b and o (split by heads), the dense and shared-expert
    gated MLPs (gate and up fused, then down)."""
    d, h = m["hidden"], m["heads"] // tp
    rope, lat, q = m["qk_rope_head_dim"], m["kv_lora_rank"], m.get("q_lora_rank", 0)
    shapes = [(q + lat + rope, d), (h * (m["head_dim"] + rope), q), (d, h * m["head_dim"])]
    for inter in (m.get("intermediate", 0) // tp, m.get("shared_experts", 0) * m.get("moe_intermediate", 0) // tp):
        if inter:
            shapes += [(2 * inter, d), (d, inter)]
    return shapes


def around(values, q):
    """The measured values that bracket q (one when q is measured or past the ends)."""
    below = [v for v in values if v <= q]
    above = [v for v in values if v >= q]
    return {max(below)} if below and max(below) == q else {v for v in (max(below, default=None),
                                                                      min(above, default=None)) if v}


def block_rows(name, header, rows):
    """The fp8_block rows of a gemm or moe table the block-quantized presets use."""
    dcol = header.index(name + "_dtype")
    block = [r for r in rows if r[dcol] == "fp8_block"]
    if not block:
        return []
    if name == "gemm":
        n_col, k_col = header.index("n"), header.index("k")
        ns, ks = sorted({int(r[n_col]) for r in block}), sorted({int(r[k_col]) for r in block})
        pairs = set()
        for m in block_models().values():
            for tp in BLOCK_TPS:
                for n, k in block_gemms(m, tp):
                    pairs |= {(a, b) for a in around(ns, n) for b in around(ks, k)}
        return [r for r in block if (int(r[n_col]), int(r[k_col])) in pairs]
    cols = [header.index(c) for c in ("hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
                                      "moe_ep_size")]
    keep = {(m["hidden"], m["moe_intermediate"], m["experts_per_token"], m["experts"]) for m in block_models().values()}
    return [r for r in block if tuple(int(r[c]) for c in cols[:4]) in keep and
            int(r[cols[4]]) * int(r[cols[5]]) <= max(BLOCK_TPS)]


def reference_headers(src):
    heads = {}
    for op, _fw, _ver, table, path in find_tables(os.path.join(src, REFERENCE)):
        if (op, table) in TABLES:
            heads[TABLES[(op, table)]] = read_table(path)[0]
    return heads


def bundle_system(src, out, system, ref_heads):
    sysdir = os.path.join(src, system)
    outdir = os.path.join(out, system)
    os.makedirs(outdir, exist_ok=True)
    desc = parse_yaml(os.path.join(sysdir, system + ".yaml"))
    shutil.copyfile(os.path.join(sysdir, system + ".yaml"), os.path.join(outdir, system + ".yaml"))

    files, rows_kept, dropped, notes = {}, {}, [], []
    devices, engines, csv_versions, row_versions = set(), set(), {}, {}
    nccl = None
    for op, fw, ver, table, path in find_tables(sysdir):
        if (op, table) not in TABLES:
            raise SystemExit(f"{path}: a table this script does not know: add it to TABLES")
        name = TABLES[(op, table)]
        header, rows = read_table(path)
        if name in ref_heads and header != ref_heads[name]:
            extra = [c for c in header if c not in ref_heads[name]]
            missing = [c for c in ref_heads[name] if c not in header]
            diff = ([f"adds {', '.join(extra)}"] if extra else []) + ([f"lacks {', '.join(missing)}"] if missing else [])
            what = f"columns differ from {REFERENCE}'s {name} ({'; '.join(diff) or 'order'})"
            if table != name + "_perf":
                notes.append(f"{table}: {what}: bundled as {table[:-len('_perf')]}.csv.gz, not {name}.csv.gz")
                name = table[: -len("_perf")]
            else:
                notes.append(f"{name}: {what}; a reader maps columns by name")
        if name in files:
            raise SystemExit(f"{path}: a second table for '{name}'")
        if fw == "nccl":
            nccl = ver
        else:
            meta = parse_yaml(os.path.join(os.path.dirname(path), "collection_meta.yaml"))
            engines.add(f"{'vLLM' if meta['runtime']['framework'] == 'vllm' else meta['runtime']['framework']} "
                        f"{meta['runtime']['version']}")
        rule = KEEP.get(name) or KEEP.get({"mla_context_module": "context_mla",
                                           "mla_generation_module": "generation_mla"}.get(name, ""))
        if rule:
            col = header.index(rule[0])
            kept = [r for r in rows if r[col] in rule[1]]
            gone = {}
            for r in rows:
                if r[col] not in rule[1]:
                    gone[r[col]] = gone.get(r[col], 0) + 1
            if gone:
                dropped.append(f"{name}: {rule[0]} " + ", ".join(f"{k} ({v} rows)" for k, v in sorted(gone.items())))
        else:
            kept = rows
        lat = header.index("latency")
        kept.sort(key=lambda r: sort_key(r, lat))
        fname = name + ".csv.gz"
        write_gzip_csv(os.path.join(outdir, fname), header, kept)
        files[name], rows_kept[name] = fname, len(kept)
        block = block_rows(name, header, rows) if system in BLOCK_SYSTEMS and name in ("gemm", "moe") else []
        if block:
            block.sort(key=lambda r: sort_key(r, lat))
            bname = name + "_fp8_block"
            write_gzip_csv(os.path.join(outdir, bname + ".csv.gz"), header, block)
            files[bname], rows_kept[bname] = bname + ".csv.gz", len(block)
            notes.append(f"{bname}: {len(block)} of the {name} rows of dtype fp8_block, those the block-quantized "
                         f"model presets ({', '.join(sorted(block_models()))}) use at TP "
                         f"{', '.join(map(str, BLOCK_TPS))}")
            kept = kept + block
        dcol, vcol = header.index("device"), header.index("version")
        devices.update(r[dcol] for r in kept)
        vs = sorted({r[vcol] for r in kept})
        if fw != "nccl":
            for r in kept:
                row_versions[r[vcol]] = row_versions.get(r[vcol], 0) + 1
            if vs != [ver]:
                csv_versions[name] = vs

    for stale in sorted(os.listdir(outdir)):
        if stale.endswith(".csv.gz") and stale not in files.values():
            os.remove(os.path.join(outdir, stale))
    if len(devices) != 1 or len(engines) != 1:
        raise SystemExit(f"{system}: expected one device and one engine, found {sorted(devices)}, {sorted(engines)}")
    for need in ("gemm", "context_attention", "generation_attention", "moe", "custom_allreduce"):
        if need not in files:
            raise SystemExit(f"{system}: no {need} table")
    engine = engines_meta = engines.pop()  # one, checked above
    if csv_versions:
        # the engine the rows were measured with, by their version column
        # (most rows first), where it differs from collection_meta.yaml's
        framework = engine.split(" ")[0]
        engine = framework + " " + ", ".join(sorted(row_versions, key=lambda v: (-row_versions[v], v)))
        notes.append("engine is the version column of the rows, most rows first (collection_meta.yaml's runtime "
                     "says " + engines_meta + "); by table: " +
                     "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(csv_versions.items())))
    yaml_nccl = desc.get("misc", {}).get("nccl_version")
    if nccl and yaml_nccl is not None and str(yaml_nccl) != nccl:
        notes.append(f"nccl is the version the nccl table was measured with ({nccl}); "
                     f"{system}.yaml's misc.nccl_version says {yaml_nccl}")
    gpu = {k: desc["gpu"].get(k) for k in GPU_KEYS}
    missing = [k for k in GPU_KEYS if k not in desc["gpu"]]
    if missing:
        notes.append(f"{system}.yaml gives no {', '.join(missing)}: null here")
    node = {k: desc["node"][k] for k in NODE_KEYS}
    misc = {"nccl_mem": desc["misc"]["nccl_mem"], "other_mem": desc["misc"]["other_mem"]}
    data_dir = desc["data_dir"]
    commit = open(os.path.join(src, "SOURCE_COMMIT"), encoding="utf-8").read().strip()
    meta = {
        "system": system,
        "device": devices.pop(),
        "engine": engine,
        "nccl": nccl,
        "gpu": gpu,
        "node": node,
        "misc": misc,
        "files": {k: files[k] for k in sorted(files, key=lambda k: (ORDER.index(k) if k in ORDER else 99, k))},
        "rows": {k: rows_kept[k] for k in sorted(files, key=lambda k: (ORDER.index(k) if k in ORDER else 99, k))},
        "source": f"AIConfigurator {commit}, aic-core/src/aiconfigurator_core/systems/{data_dir}, Apache-2.0",
        "filtered": ("kept: gemm and moe rows of dtype bfloat16 or fp8, attention rows of attn_dtype bfloat16 "
                     "(any kv_cache_dtype), mla rows of mla_dtype bfloat16, every collective row; dropped: " +
                     ("; ".join(dropped) if dropped else "nothing")),
        "notes": notes,
    }
    with open(os.path.join(outdir, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return meta


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))


def write_readme(out, metas, commit):
    lines = [
        "# Measured per-operation latencies (bundled from NVIDIA AIConfigurator)",
        "",
        "What `cost.compute = measured` prices an iteration from: per-operation",
        "latencies (GEMM, context and generation attention, fused MoE, MLA, vLLM's",
        "custom all-reduce, NCCL collectives) measured by NVIDIA's AIConfigurator",
        "collector on real GPUs running vLLM. A hardware preset names its folder",
        "with `\"optables\": \"configs/optables/SYSTEM\"` (docs/hardware.md).",
        "",
        "Provenance: github.com/ai-dynamo/aiconfigurator, commit " + commit + " (`SOURCE_COMMIT`),",
        "folder `aic-core/src/aiconfigurator_core/systems/data/SYSTEM/`, converted from",
        "Parquet to CSV. License: Apache-2.0 (`LICENSE-APACHE` beside this file);",
        "each `SYSTEM/SYSTEM.yaml` is the original system description with its SPDX",
        "header (copyright NVIDIA CORPORATION & AFFILIATES).",
        "",
        "Each `SYSTEM/` holds one gzipped CSV per table, with the collector's header",
        "and columns unchanged (`latency` in milliseconds; read columns by header",
        "name), and `meta.json`: the device, the engine version, the system",
        "description's numbers, the files and their row counts, what was filtered out",
        "and notes on tables that differ from h100_sxm's.",
        "",
        "Filter (size only, nothing else changed): GEMM and MoE rows of `gemm_dtype` /",
        "`moe_dtype` bfloat16 or fp8; attention rows of `attn_dtype` bfloat16 (any",
        "`kv_cache_dtype`); MLA rows of `mla_dtype` bfloat16; every collective row.",
        "Block-quantized FP8 (DeepSeek-V3's checkpoint: weights in 128x128 blocks, `gemm_dtype` /",
        "`moe_dtype` fp8_block) is bundled in files of its own, `gemm_fp8_block.csv.gz` and",
        "`moe_fp8_block.csv.gz`, on h200_sxm and b200_sxm only (the systems whose 8-GPU presets",
        "hold DeepSeek-V3's 671 GB and have MLA tables), and only the rows the model presets with",
        "`\"weight_quant\": \"fp8_block\"` use at TP 1, 2, 4 and 8: the measured (n, k) pairs that",
        "bracket each of their GEMMs, and the fused-MoE rows of their expert shape at every TP x EP",
        "split of at most 8 GPUs (docs/measured-mla.md).",
        "Rows are sorted by their columns (numbers numerically).",
        "",
        "Regenerate (byte-identical; the source tables are not part of a clone):",
        "",
        "```",
        "python3 reports/optables_bundle.py --src ../shared/optables --out configs/optables",
        "```",
        "",
        "| system | device | engine | NCCL table | tables | rows | size |",
        "|---|---|---|---|---|---:|---:|",
    ]
    total = 0
    for m in metas:
        size = dir_bytes(os.path.join(out, m["system"]))
        total += size
        lines.append(f"| {m['system']} | {m['device']} | {m['engine']} | {m['nccl'] or 'none'} | "
                     f"{', '.join(m['files'])} | {sum(m['rows'].values()):,} | {size / 1e6:.2f} MB |")
    lines.append(f"| total | | | | | | {total / 1e6:.2f} MB |")
    lines.append("")
    notes = [(m["system"], n) for m in metas for n in m["notes"]]
    if notes:
        lines.append("Notes (also in each `meta.json`):")
        lines.append("")
        lines.extend(f"- {s}: {n}" for s, n in notes)
        lines.append("")
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default="../shared/optables")
    ap.add_argument("--out", default="configs/optables")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    a = ap.parse_args()
    systems = [s for s in a.systems.split(",") if s]
    os.makedirs(a.out, exist_ok=True)
    for name in ("LICENSE-APACHE", "SOURCE_COMMIT"):
        shutil.copyfile(os.path.join(a.src, name), os.path.join(a.out, name))
    commit = open(os.path.join(a.src, "SOURCE_COMMIT"), encoding="utf-8").read().strip()
    ref = reference_headers(a.src)
    metas = [bundle_system(a.src, a.out, s, ref) for s in systems]
    total = write_readme(a.out, metas, commit)
    for m in metas:
        print(f"{m['system']:10} {m['engine']:12} {dir_bytes(os.path.join(a.out, m['system'])) / 1e6:6.2f} MB  "
              f"{sum(m['rows'].values()):7,} rows  {', '.join(m['files'])}")
    print(f"total      {total / 1e6:.2f} MB in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
