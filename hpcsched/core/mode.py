"""The metric's direction: the one owner of "is score a better than score b"."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line imports this module: numpy only where arrays are used
    import numpy as np


class Mode(str, Enum):
    """``max`` (accuracy) or ``min`` (loss, perplexity); compares equal to its string."""

    MAX = "max"
    MIN = "min"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def sign(self) -> float:
        """+1 for max, -1 for min: ``sign * score`` is higher-is-better."""
        return 1.0 if self is Mode.MAX else -1.0

    def better(self, a: float, b: float | None) -> bool:
        """Whether score ``a`` strictly beats ``b`` (any score beats None)."""
        return b is None or (a > b if self is Mode.MAX else a < b)

    def best(self, values: np.ndarray) -> float:
        """The best of ``values`` (not empty)."""
        return float(values.max() if self is Mode.MAX else values.min())

    def best_index(self, values: np.ndarray) -> int:
        """The position of the first best of ``values`` (not empty)."""
        return int(values.argmax() if self is Mode.MAX else values.argmin())

    def running_best(self, values: np.ndarray) -> np.ndarray:
        """The best so far at each position."""
        import numpy as np

        return np.maximum.accumulate(values) if self is Mode.MAX else np.minimum.accumulate(values)


MODES = tuple(m.value for m in Mode)
