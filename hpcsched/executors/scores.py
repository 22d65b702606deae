"""Incremental reader of a trial's ``scores.jsonl``: keeps a byte offset, never re-reads the file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class ScoresReader:
    """Yields the new complete lines of one launch; a partial last line waits for the next read."""

    def __init__(self, path: Path, launch_id: str, offset: int = 0):
        self.path = Path(path)
        self.launch_id = launch_id
        self.offset = offset

    def read(self) -> list[dict[str, Any]]:
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return []
        if size <= self.offset:
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(size - self.offset)
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        lines = []
        for raw in data[: end + 1].split(b"\n"):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                continue  # a corrupted line: skip it, the next ones still count
            if isinstance(line, dict) and line.get("launch") == self.launch_id:
                lines.append(line)
        return lines


def read_all(path: Path) -> list[dict[str, Any]]:
    """Every parsable line of a scores file (for recovery and analysis)."""
    out = []
    try:
        with open(path, "rb") as f:
            for raw in f:
                if raw.endswith(b"\n"):
                    try:
                        line = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(line, dict):
                        out.append(line)
    except FileNotFoundError:
        pass
    return out
