#!/usr/bin/env python3
"""reports/vllm_moe_configs.py — write configs/vllm/fused_moe_configs.json
from vLLM's tuned fused-MoE config files (configs/vllm/README.md).

For every GPU with measured tables (configs/optables/*/meta.json "device")
and every MoE model preset (configs/models/*.json with "experts") at TP 1,
2, 4 and 8, the file E={experts},N={moe intermediate / TP},device_name=
{device, spaces as underscores}.json of --src, when it exists, becomes an
entry: its keys in file order and, per key, the index of the first key whose
config is identical (every field). Configs themselves are not copied.

usage: python3 reports/vllm_moe_configs.py --src VLLM/vllm/model_executor/layers/fused_moe/configs
           --commit SHA [--out configs/vllm/fused_moe_configs.json] [--root .]
Standard library only. The bundled file was read file by file from the
public repository, each at the commit it records; a run of this script on
one checkout records that checkout's commit for every file.
"""
import argparse
import glob
import json
import os
import sys

TPS = (1, 2, 4, 8)


def shapes(root):
    """(E, N) of every MoE preset at every TP that divides its experts' intermediate size."""
    out = set()
    for path in sorted(glob.glob(os.path.join(root, "configs/models/*.json"))):
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
        if m.get("experts", 0) > 0 and not m.get("weight_quant"):
            inter = m.get("moe_intermediate") or m["intermediate"]
            out.update((m["experts"], inter // tp) for tp in TPS if inter % tp == 0)
    return sorted(out)


def devices(root):
    out = []
    for path in sorted(glob.glob(os.path.join(root, "configs/optables/*/meta.json"))):
        with open(path, encoding="utf-8") as f:
            dev = json.load(f).get("device")
        if dev:
            out.append(dev)
    return out


def entry(path, dev, e, n, commit):
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    cfg.pop("triton_version", None)
    keys = [int(k) for k in cfg]
    vals = list(cfg.values())
    first = [next(j for j in range(i + 1) if vals[j] == vals[i]) for i in range(len(vals))]
    rel = "vllm/model_executor/layers/fused_moe/configs/" + os.path.basename(path)
    return {"device": dev, "E": e, "N": n, "keys": keys, "config": first, "path": rel, "commit": commit}


def dump(doc, out):
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(doc[k], ensure_ascii=False)}," for k in ("about", "source", "default")]
    rows = [
        f'  {{"device": {json.dumps(x["device"])}, "E": {x["E"]}, "N": {x["N"]}, "keys": {json.dumps(x["keys"])}, '
        f'"config": {json.dumps(x["config"])},\n   "path": {json.dumps(x["path"])}, "commit": {json.dumps(x["commit"])}}}'
        for x in doc["files"]
    ]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines + [' "files": [', ",\n".join(rows), " ]", "}"]) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="vLLM's fused_moe/configs folder")
    ap.add_argument("--commit", required=True, help="the vLLM commit --src is checked out at")
    ap.add_argument("--root", default=".", help="the kvsim checkout (presets, tables)")
    ap.add_argument("--out", default="configs/vllm/fused_moe_configs.json")
    a = ap.parse_args()
    if not os.path.isdir(a.src):
        sys.exit(f"vllm_moe_configs: {a.src}: not a folder (give vLLM's vllm/model_executor/layers/fused_moe/configs)")
    with open(os.path.join(a.root, a.out), encoding="utf-8") as f:
        doc = json.load(f)  # its prose fields stay
    files = []
    for dev in devices(a.root):
        for e, n in shapes(a.root):
            path = os.path.join(a.src, f"E={e},N={n},device_name={dev.replace(' ', '_')}.json")
            if os.path.exists(path):
                files.append(entry(path, dev, e, n, a.commit))
    doc["files"] = sorted(files, key=lambda x: (x["device"], x["E"], x["N"]))
    dump(doc, os.path.join(a.root, a.out))
    print(f"vllm_moe_configs: {len(files)} files into {a.out}")


if __name__ == "__main__":
    main()
