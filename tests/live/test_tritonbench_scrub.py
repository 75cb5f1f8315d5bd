"""D80: an operator's test code starts from zeroed device memory, as in a fresh process."""

from __future__ import annotations

import pytest
import torch

from live.tasks.tritonbench.operator import scrub_device_memory

INT_MAX = 2**31 - 1


def test_scrub_is_a_no_op_without_an_initialised_gpu() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        pytest.skip("CUDA is initialised in this process")
    scrub_device_memory()  # nothing to give back, nothing to zero, no CUDA context made
    assert not (torch.cuda.is_available() and torch.cuda.is_initialized())


@pytest.mark.gpu
def test_scrub_zeroes_the_blocks_the_next_run_is_served_from() -> None:
    """Leftovers (the integer maximum, as D69's fills leave) in free blocks of a segment that a
    live tensor keeps, and in segments given back: after the scrub, every new uninitialised
    tensor, small or large, reads zeros."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    keep = torch.ones(16, dtype=torch.int32, device="cuda")  # keeps its small segment
    dirty = [torch.full((n,), INT_MAX, dtype=torch.int32, device="cuda")
             for n in [2, 100, 128, 1000, 60_000] * 8]
    big = torch.full((2**23,), INT_MAX, dtype=torch.int32, device="cuda")
    del dirty, big
    scrub_device_memory()
    fresh = [torch.empty(n, dtype=torch.int32, device="cuda")
             for n in [2, 100, 128, 1000, 60_000] * 8 + [2**22]]
    assert all(int(t.abs().max()) == 0 for t in fresh)
    assert int(keep.sum()) == 16  # live tensors are untouched
