"""Dynamic allocation: which sizes a trial may hold, and whether growing it pays (the overhead-aware test)."""

from __future__ import annotations

from hpcsched.core.scaling import Scaling


def allowed_size(atoms: int, grid: int) -> int:
    """Largest allowed allocation <= ``atoms``: up to ``grid`` any size, above it multiples of ``grid``."""
    if atoms <= grid:
        return max(atoms, 0)
    return atoms - atoms % grid


def worth_resizing(scaling: Scaling, current: int, new: int, time_left: float, overhead: float,
                   margin: float) -> bool:
    """The overhead-aware test: grow only if H'·(T − T_o) > (1 + margin)·H·T. Shrinking always passes."""
    if new < current:
        return True
    if new == current or time_left - overhead <= 0:
        return False
    return scaling.rate(new) * (time_left - overhead) > (1.0 + margin) * scaling.rate(current) * time_left
