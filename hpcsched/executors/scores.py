"""Incremental reader of a trial's ``scores.jsonl``: keeps a byte offset, never re-reads the file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class ScoresReader:
    """Yields the new complete lines of one launch (``launch_id``; None: of every launch);
    a partial last line waits for the next read."""

    def __init__(self, path: Path, launch_id: str | None, offset: int = 0):
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
            if isinstance(line, dict) and (self.launch_id is None or line.get("launch") == self.launch_id):
                lines.append(line)
        return lines

