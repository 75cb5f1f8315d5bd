"""Which tensors the D80 scrub leaves non-zero, on a GPU: the scrub test's steps, printed.

    python benchmarks/gpu/scrub_probe.py
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help, no options
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from live.tasks.tritonbench.operator import scrub_device_memory  # noqa: E402

print("PYTORCH_CUDA_ALLOC_CONF", os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
keep = torch.ones(16, dtype=torch.int32, device="cuda")
sizes = [2, 100, 128, 1000, 60_000] * 8
dirty = [torch.full((n,), 2**31 - 1, dtype=torch.int32, device="cuda") for n in sizes]
big = torch.full((2**23,), 2**31 - 1, dtype=torch.int32, device="cuda")
del dirty, big
scrub_device_memory()
for segment in torch.cuda.memory_snapshot():
    print(segment["segment_type"], segment["total_size"],
          [(b["size"], b["state"]) for b in segment["blocks"]][:12])
fresh = [torch.empty(n, dtype=torch.int32, device="cuda") for n in sizes + [2**22]]
for n, t in zip(sizes + [2**22], fresh, strict=True):
    nonzero = int((t != 0).sum())
    if nonzero:
        print(f"size {n}: {nonzero} non-zero, e.g. {t[t != 0][:3].tolist()}, ptr {t.data_ptr():#x}")
print("done")
