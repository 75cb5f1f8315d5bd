"""Price table: USD per 1M input / output tokens, per model.

The shipped table (``prices.json``, package data) holds public list prices; a user file (JSON or
YAML, same format) is merged over it. Models are matched by exact name: a dated snapshot or a
provider-prefixed name is a different model with possibly a different price. An unknown model
costs ``None`` (logged once per model), never a guessed figure.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelPrice:
    """USD per 1M tokens."""

    input_per_1m: float
    output_per_1m: float

    def __post_init__(self) -> None:
        if self.input_per_1m < 0 or self.output_per_1m < 0:
            raise ValueError("prices must be non-negative")

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_1m + completion_tokens * self.output_per_1m) / 1e6


def _parse_table(raw: object, origin: str) -> dict[str, ModelPrice]:
    if not isinstance(raw, dict):
        raise ValueError(f"{origin}: a price table is a mapping model -> prices")
    table: dict[str, ModelPrice] = {}
    for model, entry in raw.items():
        if str(model).startswith("_"):
            continue  # comments
        if not isinstance(entry, dict) or set(entry) != {"input_per_1m", "output_per_1m"}:
            raise ValueError(
                f"{origin}: model {model!r} needs exactly input_per_1m and output_per_1m "
                f"(USD per 1M tokens), got {entry!r}"
            )
        table[str(model)] = ModelPrice(float(entry["input_per_1m"]), float(entry["output_per_1m"]))
    return table


def load_default_prices() -> dict[str, ModelPrice]:
    text = resources.files("live.proposers").joinpath("prices.json").read_text(encoding="utf-8")
    return _parse_table(json.loads(text), "prices.json")


def load_price_file(path: str | Path) -> dict[str, ModelPrice]:
    """Read a JSON or YAML price file."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    return _parse_table(raw, str(path))


@dataclass
class PriceTable:
    """Prices per model; ``cost_usd`` is None for a model without a price."""

    prices: dict[str, ModelPrice] = field(default_factory=load_default_prices)
    _warned: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def load(cls, override_file: str | Path | None = None) -> PriceTable:
        prices = load_default_prices()
        if override_file is not None:
            prices.update(load_price_file(override_file))
        return cls(prices)

    def price(self, model: str) -> ModelPrice | None:
        return self.prices.get(model)

    def cost_usd(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self.prices.get(model)
        if price is None:
            if model not in self._warned:
                self._warned.add(model)
                log.warning(
                    "no price for model %r: its cost is recorded as null; add it with "
                    "--price-file (USD per 1M input/output tokens)",
                    model,
                )
            return None
        return price.cost_usd(prompt_tokens, completion_tokens)
