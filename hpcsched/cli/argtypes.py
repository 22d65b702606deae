"""argparse types; argparse names the option in its message and exits with code 2."""

from __future__ import annotations

import argparse

from hpcsched.core.durations import parse_duration


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_duration(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError:
        seconds = -1.0
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration like 90s, 30m, 2h, got {text!r}")
    return seconds
