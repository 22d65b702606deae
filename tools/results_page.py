"""How the benchmark tools publish a results page (docs/results/*.md): one owner for printing and writing it."""

from __future__ import annotations

from pathlib import Path


def publish(text: str, out: Path) -> None:
    """Print a results page and write it to ``out`` (its folder made if need be)."""
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out}")
