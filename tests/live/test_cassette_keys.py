"""Cassette keys ignore measurements in a prompt's prose, never the code it carries."""

from __future__ import annotations

from live.proposers.cassette import cassette_key

CODE = "```python\nBLOCK_SIZE = 256\nx = 1.5e-3\n```"


def _key(prose: str, code: str = CODE) -> str:
    messages = [{"role": "system", "content": "be fast"},
                {"role": "user", "content": f"{prose}\n\n{code}\n"}]
    return cassette_key("m", messages, 0.7, 3)


def test_runtime_and_profile_numbers_do_not_change_the_key() -> None:
    a = _key("Runtime: 0.0213 ms (1.93x the reference). Profile: DRAM 88% of peak; 40 registers")
    b = _key("Runtime: 0.0307 ms (1.41x the reference). Profile: DRAM 71% of peak; 48 registers")
    assert a == b


def test_code_and_words_do_change_the_key() -> None:
    base = _key("Runtime: 1 ms")
    assert _key("Runtime: 1 ms", CODE.replace("256", "512")) != base
    assert _key("Runtime: 1 ms", CODE.replace("1.5e-3", "2.5e-3")) != base
    assert _key("Latency: 1 ms") != base
    assert cassette_key("m", [{"role": "user", "content": "x"}], 0.7, 4) != cassette_key(
        "m", [{"role": "user", "content": "x"}], 0.7, 3)
