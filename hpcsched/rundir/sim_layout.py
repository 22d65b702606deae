"""The simulator's output directory (``hpcsched simulate SPEC --out DIR``), written by
loop/simulate.py and read by analysis/simulation.py::

    DIR/summary.csv                                   one row per run (matrix columns, variant, seed, ...)
    DIR/events/<cell>/<variant>/seed-<k>.jsonl        one journal per run (absent with --no-events)
"""

from __future__ import annotations

import re
from pathlib import Path

SUMMARY = "summary.csv"
EVENTS = "events"
SEED_FILE = re.compile(r"^seed-(-?\d+)\.jsonl$")


def safe_name(text: str) -> str:
    """A cell or variant label as a folder name."""
    return "".join(c if c.isalnum() or c in "-_.=," else "_" for c in text)


def summary_path(out: Path) -> Path:
    return Path(out) / SUMMARY


def events_dir(out: Path) -> Path:
    return Path(out) / EVENTS


def is_simulation_output(path: Path) -> bool:
    """Whether ``path`` holds what ``hpcsched simulate`` writes (a summary or event journals)."""
    return summary_path(path).is_file() or events_dir(path).is_dir()


def journal_path(out: Path, cell: str, variant: str, seed: int) -> Path:
    """The journal of one simulated run."""
    return events_dir(out) / safe_name(cell) / safe_name(variant) / f"seed-{seed}.jsonl"
