"""Dynamic allocation: how many atoms each live trial should hold, and which sizes are allowed."""

from __future__ import annotations

from hpcsched.scaling import Scaling


def allowed_size(atoms: int, grid: int) -> int:
    """Largest allowed allocation <= ``atoms``: up to ``grid`` any size, above it multiples of ``grid``."""
    if atoms <= grid:
        return max(atoms, 0)
    return atoms - atoms % grid


def target_atoms(policy: str, rank: int, live: int, total: int, cap: int) -> int:
    """Atoms a live trial of score rank ``rank`` (0 = best) should hold among ``live`` trials.

    Every live trial keeps one atom; the rest go round-robin in score order (uniform) or
    all to the best trial (top_job), each trial capped at ``cap``.
    """
    if live <= 0:
        return 0
    spare = max(0, total - live)
    if policy == "uniform":
        share = 1 + spare // live + (1 if rank < spare % live else 0)
    elif policy == "top_job":
        share = 1 + (spare if rank == 0 else 0)
    else:
        raise ValueError(f"no targets for allocation policy {policy!r}")
    return max(1, min(share, cap))


def worth_resizing(scaling: Scaling, current: int, new: int, time_left: float, overhead: float,
                   margin: float) -> bool:
    """The overhead-aware test: grow only if H'·(T − T_o) > (1 + margin)·H·T. Shrinking always passes."""
    if new < current:
        return True
    if new == current or time_left - overhead <= 0:
        return False
    return scaling.rate(new) * (time_left - overhead) > (1.0 + margin) * scaling.rate(current) * time_left
