"""reports/gpu_host.py — what a GPU probe's JSON says of the machine it ran
on (reports/moe_compile_probe.py, reports/sampler_probe.py): the CPU model
and core count, the GPU's name, PyTorch's and Python's versions, and
whatever else the probe adds (its own libraries' versions)."""
import os
import platform


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
