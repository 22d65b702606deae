"""How the benchmark tools publish a results page (docs/results/*.md): one owner for printing and writing it."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def publish(text: str, out: Path) -> None:
    """Print a results page and write it to ``out`` (its folder made if need be)."""
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out}")


def commit() -> str:
    """The commit a page is measured on (short hash; "+ uncommitted changes" where tracked files differ)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")
