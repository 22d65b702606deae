"""Durations written as numbers (seconds / time units) or strings like ``90s``, ``30m``, ``2h``."""

from __future__ import annotations

import math
import re

from hpcsched.core.errors import shown

_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_PLAIN = re.compile(_NUMBER, re.ASCII)
_PART = re.compile(rf"({_NUMBER})\s*(min|s|m|h|d)", re.ASCII | re.IGNORECASE)
_FIELD = re.compile(r"[0-9]{1,9}", re.ASCII)
MAX_DURATION_S = 366 * 86400.0  # no deadline, step or margin is longer than a year


def parse_duration(value: object) -> float:
    """Return seconds for ``value``; raise ValueError naming the value when it is not a duration.

    Accepts ints/floats, numeric strings, unit strings (``90s``, ``30m``, ``2h``, ``1d``),
    compound strings (``1h30m``, every number with its unit) and ``HH:MM:SS`` / ``MM:SS`` /
    ``D-HH:MM:SS`` (as Slurm prints time left; minutes and seconds below 60). ASCII digits only;
    at most a year.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {shown(value)}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse_text(value.strip())
    else:
        raise ValueError(f"not a duration: {shown(value)}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"not a duration: {shown(value)}")
    if seconds > MAX_DURATION_S:
        raise ValueError(f"longer than a year: {shown(value)}")
    return seconds


def _parse_text(text: str) -> float:
    if not text or len(text) > 64:
        raise ValueError(f"not a duration: {shown(text)}")
    if ":" in text:
        return _parse_clock(text)
    if _PLAIN.fullmatch(text):
        return float(text)
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if text[pos:match.start()].strip():
            raise ValueError(f"not a duration: {shown(text)}")
        total += float(match.group(1)) * _UNITS[match.group(2).lower()]
        pos = match.end()
    if pos == 0 or text[pos:].strip():
        raise ValueError(f"not a duration: {shown(text)}")
    return total


def _parse_clock(text: str) -> float:
    original = text
    days = 0
    if "-" in text:  # Slurm's D-HH:MM:SS
        day_text, text = text.split("-", 1)
        if not _FIELD.fullmatch(day_text):
            raise ValueError(f"not a duration: {shown(original)}")
        days = int(day_text)
    parts = text.split(":")
    if len(parts) not in (2, 3) or not all(_FIELD.fullmatch(p) for p in parts):
        raise ValueError(f"not a duration: {shown(original)}")
    numbers = [int(p) for p in parts]
    if len(numbers) == 2:
        numbers.insert(0, 0)
    hours, minutes, seconds = numbers
    if minutes >= 60 or seconds >= 60 or (days and hours >= 24):
        raise ValueError(f"not a duration: {shown(original)} (minutes and seconds are 00-59, hours 00-23 after days)")
    return days * 86400.0 + hours * 3600.0 + minutes * 60.0 + seconds


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
