"""Profile files: measured throughput and startup per allocation, written by ``hpcsched profile``.

A spec names one as ``scheduler.profile: path.yaml``; the scheduler then believes its speedup
table as s(a) and uses its startup estimate as T_o until startups of the run are measured.

    kind: hpcsched-profile
    version: 1
    allocations:            # one entry per atom count measured
      - {atoms: 1, steps_per_second: 3.1, startup_seconds: 5.2}
      - {atoms: 2, steps_per_second: 5.6, startup_seconds: 5.9}
    scaling: {1: 1.0, 2: 1.81}   # steps_per_second relative to one atom
    startup_estimate: 5.9        # seconds (the largest measured startup)
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Sequence

import yaml

from hpcsched.core.scaling import Scaling, table_scaling
from hpcsched.spec.yaml_text import load_yaml

KIND = "hpcsched-profile"


def build_profile(measurements: Sequence[dict[str, float]], **context: Any) -> dict[str, Any]:
    """The profile document for measurements ``[{atoms, steps_per_second, startup_seconds}, ...]``."""
    rows = sorted(measurements, key=lambda m: m["atoms"])
    if not rows or rows[0]["atoms"] != 1:
        raise ValueError("a profile needs a measurement on 1 atom (the speedup baseline)")
    base = rows[0]["steps_per_second"]
    if base <= 0:
        raise ValueError("the 1-atom throughput must be positive")
    return {
        "kind": KIND, "version": 1, "created": dt.datetime.now().isoformat(timespec="seconds"), **context,
        "allocations": [{k: float(v) if k != "atoms" else int(v) for k, v in m.items()} for m in rows],
        "scaling": {int(m["atoms"]): round(float(m["steps_per_second"]) / base, 4) for m in rows},
        "startup_estimate": round(max(float(m["startup_seconds"]) for m in rows), 3),
    }


def write_profile(path: Path, profile: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(profile, sort_keys=False))


def read_profile(path: Path) -> tuple[Scaling, float | None]:
    """(believed scaling, startup estimate) from a profile file; ValueError names the problem."""
    try:
        data = load_yaml(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"cannot read profile {str(path)!r}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"profile {str(path)!r} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ValueError(f"{str(path)!r} is not a profile written by 'hpcsched profile' (kind: {KIND})")
    scaling = data.get("scaling")
    if not isinstance(scaling, dict):
        raise ValueError(f"profile {str(path)!r}: 'scaling' must be a table {{atoms: speedup}}, got {scaling!r}")
    try:
        table = table_scaling(scaling)
    except ValueError as exc:
        raise ValueError(f"profile {str(path)!r}: {exc}") from None
    startup = data.get("startup_estimate")
    if startup is not None and (not isinstance(startup, (int, float)) or isinstance(startup, bool) or startup < 0):
        raise ValueError(f"profile {str(path)!r}: startup_estimate must be seconds >= 0, got {startup!r}")
    return table, (float(startup) if startup is not None else None)
