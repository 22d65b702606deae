"""The pool of atoms (GPUs, groups of GPUs, or CPU slots) a run holds.

Atom ids are strings; ``node:index`` ids belong to ``node`` (SLURM), plain ids to one node.
Allocation packs a trial onto as few nodes as possible (best fit), lowest ids first.
"""

from __future__ import annotations

import bisect
from typing import Iterable, Sequence


def node_of(atom_id: str) -> str:
    return atom_id.rpartition(":")[0]


class AtomPool:
    """Which atoms are free. ``choose`` picks without taking; ``take``/``release`` change the pool."""

    def __init__(self, atom_ids: Sequence[str]):
        if len(set(atom_ids)) != len(atom_ids):
            raise ValueError(f"duplicate atom ids in {list(atom_ids)!r}")
        self.ids = tuple(atom_ids)
        self._position = {a: i for i, a in enumerate(self.ids)}
        self._free_by_node: dict[str, list[int]] = {}
        for i, a in enumerate(self.ids):
            self._free_by_node.setdefault(node_of(a), []).append(i)
        self.free_count = len(self.ids)

    @property
    def total(self) -> int:
        return len(self.ids)

    def is_free(self, atom_id: str) -> bool:
        free = self._free_by_node.get(node_of(atom_id), [])
        pos = self._position[atom_id]
        i = bisect.bisect_left(free, pos)
        return i < len(free) and free[i] == pos

    def choose(self, n: int) -> tuple[str, ...]:
        """``n`` free atoms, packed onto few nodes; raise ValueError when fewer are free."""
        if n > self.free_count:
            raise ValueError(f"asked for {n} atoms, {self.free_count} free")
        if len(self._free_by_node) == 1:
            (free,) = self._free_by_node.values()
            return tuple(self.ids[i] for i in free[:n])
        fitting = [(len(f), node) for node, f in self._free_by_node.items() if len(f) >= n]
        if fitting:
            _, node = min(fitting)
            return tuple(self.ids[i] for i in self._free_by_node[node][:n])
        chosen: list[str] = []
        for free in sorted(self._free_by_node.values(), key=len, reverse=True):
            chosen.extend(self.ids[i] for i in free[: n - len(chosen)])
            if len(chosen) == n:
                break
        return tuple(chosen)

    def take(self, atom_ids: Iterable[str]) -> None:
        for a in atom_ids:
            free = self._free_by_node[node_of(a)]
            pos = self._position[a]
            i = bisect.bisect_left(free, pos)
            if i == len(free) or free[i] != pos:
                raise ValueError(f"atom {a!r} is not free")
            del free[i]
            self.free_count -= 1

    def release(self, atom_ids: Iterable[str]) -> None:
        for a in atom_ids:
            free = self._free_by_node[node_of(a)]
            pos = self._position[a]
            i = bisect.bisect_left(free, pos)
            if i < len(free) and free[i] == pos:
                raise ValueError(f"atom {a!r} is already free")
            free.insert(i, pos)
            self.free_count += 1
