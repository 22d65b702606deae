"""Durations written as numbers (seconds / time units) or strings like ``90s``, ``30m``, ``2h``."""

from __future__ import annotations

import math
import re

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(min|s|m|h|d)?", re.IGNORECASE)


def parse_duration(value: object) -> float:
    """Return seconds for ``value``; raise ValueError naming the value when it is not a duration.

    Accepts ints/floats, numeric strings, unit strings (``90s``, ``30m``, ``2h``, ``1d``),
    compound strings (``1h30m``) and ``HH:MM:SS`` / ``MM:SS`` (as Slurm prints time left).
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse_text(value.strip())
    else:
        raise ValueError(f"not a duration: {value!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"not a duration: {value!r}")
    return seconds


def _parse_text(text: str) -> float:
    if not text:
        raise ValueError("not a duration: ''")
    if ":" in text:
        return _parse_clock(text)
    pos, total, matched = 0, 0.0, False
    for match in _PART.finditer(text):
        if match.start() != pos and text[pos:match.start()].strip():
            raise ValueError(f"not a duration: {text!r}")
        total += float(match.group(1)) * _UNITS[(match.group(2) or "").lower()]
        pos, matched = match.end(), True
    if not matched or text[pos:].strip():
        raise ValueError(f"not a duration: {text!r}")
    return total


def _parse_clock(text: str) -> float:
    days = 0.0
    if "-" in text:  # Slurm's D-HH:MM:SS
        day_text, text = text.split("-", 1)
        if not day_text.isdigit():
            raise ValueError(f"not a duration: {text!r}")
        days = float(day_text)
    parts = text.split(":")
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a duration: {text!r}")
    numbers = [float(p) for p in parts]
    if len(numbers) == 2:
        numbers.insert(0, 0.0)
    hours, minutes, seconds = numbers
    return days * 86400 + hours * 3600 + minutes * 60 + seconds


def format_duration(seconds: float) -> str:
    """Short human form: ``42s``, ``3m05s``, ``2h01m``."""
    if not math.isfinite(seconds):
        return "inf"
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s < 60:
        return f"{sign}{s:.0f}s"
    if s < 3600:
        return f"{sign}{int(s // 60)}m{int(s % 60):02d}s"
    return f"{sign}{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
