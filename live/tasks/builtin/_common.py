"""Helpers shared by the built-in tasks: seeded input generation and small size formulas.

Inputs are generated on the CPU with an explicit ``torch.Generator`` (no global random state) and
then moved to the target device, so a (shape, seed) pair gives the same numbers on every device.

Here and in every built-in task, torch is imported inside the functions that use it: the
runner's process (`kernelband live`) loads the tasks but runs them only in its workers, and
torch at the top cost each start ~2 s of CPU (#36).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with ``seed``."""
    import torch

    return torch.Generator(device="cpu").manual_seed(seed)


def randn(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, device: str,
          scale: float = 1.0) -> torch.Tensor:
    """Standard-normal tensor (times ``scale``) made on the CPU, cast, then moved to ``device``."""
    import torch

    values = torch.randn(shape, generator=gen, dtype=torch.float32) * scale
    return values.to(dtype).to(device)


def rand(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, device: str) -> torch.Tensor:
    """Uniform [0, 1) tensor made on the CPU, cast, then moved to ``device``."""
    import torch

    return torch.rand(shape, generator=gen, dtype=torch.float32).to(dtype).to(device)


def randint(high: int, shape: tuple[int, ...], gen: torch.Generator, device: str) -> torch.Tensor:
    """int64 tensor uniform in [0, high)."""
    import torch

    return torch.randint(0, high, shape, generator=gen, dtype=torch.int64).to(device)
