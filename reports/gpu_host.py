"""reports/gpu_host.py — what the GPU probes (reports/moe_compile_probe.py,
reports/gemm_probe.py, reports/sampler_probe.py) share: the CUDA device or
an exit saying what is missing, what their JSON says of the machine it ran
on (the CPU model and core count, the GPU's name, PyTorch's and Python's
versions, and whatever else the probe adds: its own libraries' versions),
writing that JSON, and timing a call with CUDA events."""
import json
import os
import platform
import sys


def cuda_device(torch, script, needs="PyTorch (the device machine has it)"):
    """CUDA device 0 for script; without torch (None: an import failed) exit
    2 saying what it needs, without a CUDA GPU exit 1 saying where to run."""
    if torch is None:
        print("%s: needs %s" % (script, needs), file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        sys.exit("%s: no CUDA GPU: run it on a GPU host (the tool library's device)" % script)
    return torch.device("cuda", 0)


def host(torch, **extra):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out = {"cpu": cpu or platform.processor(), "cores": os.cpu_count(), "gpu": torch.cuda.get_device_name(0),
           "torch": torch.__version__, "python": platform.python_version()}
    out.update(extra)
    return out


def emit(out, path):
    """The probe's JSON object to the file at path, or to stdout without one."""
    text = json.dumps(out, indent=1)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


def event_times(torch, run, reps, warm, per=1):
    """run() `warm` times, then `reps` times each between two CUDA events:
    the sorted times in ms, each divided by `per` (the calls one run makes)."""
    for _ in range(warm):
        run()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / per)
    return sorted(times)
