"""The machine's small rules, once (`live.devices`): the device `auto` means, worker counts."""

from __future__ import annotations

import pytest

from live.devices import EVAL_WORKERS_CAP, resolve_device, usable_cores, worker_count


@pytest.mark.parametrize(("device", "asked", "parallel", "cores", "expected"), [
    ("cuda", 3, 40, 64, 3),  # asked for: taken as given
    ("cuda", None, 40, 64, EVAL_WORKERS_CAP),  # the device's cap
    ("cuda", 0, 5, 64, 5),  # one per piece of parallel work
    ("cuda", None, 40, 3, 3),  # at most the cores
    ("cuda", None, 40, 0, 1),  # at least one
    ("cpu", None, 40, 64, 1),  # the CPU's cap
])
def test_worker_count_takes_the_ask_else_the_smallest_limit(device, asked, parallel, cores,
                                                            expected):
    assert worker_count(device, asked=asked, parallel=parallel, cores=cores,
                        gpu_cap=EVAL_WORKERS_CAP) == expected


def test_the_cpu_cap_is_its_own():
    assert worker_count("cpu", asked=None, parallel=10, cores=8, gpu_cap=16, cpu_cap=4) == 4


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_named_device_is_kept(device):
    assert resolve_device(device) == device


def test_auto_is_a_device_and_anything_else_an_error():
    assert resolve_device("auto") in ("cpu", "cuda")
    with pytest.raises(ValueError, match="auto, cpu or cuda"):
        resolve_device("tpu")


def test_there_is_at_least_one_usable_core():
    assert usable_cores() >= 1
