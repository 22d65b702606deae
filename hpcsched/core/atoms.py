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

    def choose(self, n: int, near: Sequence[str] = (), single_node: bool = False) -> tuple[str, ...]:
        """``n`` free atoms: on the nodes of ``near`` first (a trial's own atoms), else packed onto
        as few nodes as possible (best fit). With ``single_node``, all on one node: when no node
        has ``n`` free, the most a single node offers (fewer than ``n``). ValueError if < 1 free."""
        if n > self.free_count and not single_node:
            raise ValueError(f"asked for {n} atoms, {self.free_count} free")
        if self.free_count == 0:
            raise ValueError(f"asked for {n} atoms, none free")
        preferred = list(dict.fromkeys(node_of(a) for a in near))
        rank = {node: i for i, node in enumerate(preferred)}
        free = self._free_by_node
        fitting = [node for node, f in free.items() if len(f) >= n]
        if fitting:
            node = min(fitting, key=lambda nd: (rank.get(nd, len(rank)), len(free[nd]), nd))
            return tuple(self.ids[i] for i in free[node][:n])
        if single_node:
            node = max(free, key=lambda nd: (len(free[nd]), -rank.get(nd, len(rank))))
            return tuple(self.ids[i] for i in free[node])
        chosen: list[str] = []
        for node in sorted(free, key=lambda nd: (rank.get(nd, len(rank)), -len(free[nd]), nd)):
            chosen.extend(self.ids[i] for i in free[node][: n - len(chosen)])
            if len(chosen) == n:
                break
        return tuple(chosen)

    def free_on(self, node: str) -> tuple[str, ...]:
        """The free atoms of one node, lowest first."""
        return tuple(self.ids[i] for i in self._free_by_node.get(node, []))

    def _known(self, atom_id: str) -> None:
        if atom_id not in self._position:
            raise ValueError(f"atom {atom_id!r} is not one of the run's atoms")

    def take(self, atom_ids: Iterable[str]) -> None:
        for a in atom_ids:
            self._known(a)
            free = self._free_by_node[node_of(a)]
            pos = self._position[a]
            i = bisect.bisect_left(free, pos)
            if i == len(free) or free[i] != pos:
                raise ValueError(f"atom {a!r} is not free")
            del free[i]
            self.free_count -= 1

    def release(self, atom_ids: Iterable[str]) -> None:
        for a in atom_ids:
            self._known(a)
            free = self._free_by_node[node_of(a)]
            pos = self._position[a]
            i = bisect.bisect_left(free, pos)
            if i < len(free) and free[i] == pos:
                raise ValueError(f"atom {a!r} is already free")
            free.insert(i, pos)
            self.free_count += 1
