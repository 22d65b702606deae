"""Reading one section of a spec: ``Section`` collects every problem with its field path; the value
parsers raise ValueError with the bad value shown, which ``Section`` files under the key."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Mapping

from hpcsched.core.durations import parse_duration
from hpcsched.core.errors import shown
from hpcsched.core.scaling import Scaling, parse_scaling

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", re.ASCII)  # a run name is a directory name

_MISSING = object()


class Section:
    """Reads one mapping of the spec, recording problems with their field paths."""

    def __init__(self, raw: object, path: str, problems: list[str]):
        self.path = path
        self.problems = problems
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            problems.append(f"{path or '(top level)'}: expected a mapping, got {shown(raw)}")
            raw = {}
        self.raw = raw

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def take(self, key: str, parse: Callable[[Any], Any], default: Any = _MISSING) -> Any:
        if key not in self.raw:
            if default is _MISSING:
                self.problems.append(f"{self._where(key)}: required")
                return None
            return default
        try:
            return parse(self.raw[key])
        except ValueError as exc:
            self.problems.append(f"{self._where(key)}: {exc}")
            return None

    def read(self, table: Mapping[str, Callable[[Any], Any]], also: tuple[str, ...] = ()) -> dict[str, Any]:
        """The keys of ``table`` that the section holds, each parsed by its entry (a value that fails
        is a problem and is left out); any key neither in ``table`` nor in ``also`` is a problem too."""
        values: dict[str, Any] = {}
        for key, parse in table.items():
            if key in self.raw:
                before = len(self.problems)
                value = self.take(key, parse)
                if len(self.problems) == before:
                    values[key] = value
        self.reject_unknown(tuple(table) + also)
        return values

    def reject_unknown(self, known: tuple[str, ...]) -> None:
        for key in self.raw:
            if key not in known:
                self.problems.append(f"{self._where(str(key))}: unknown key; valid keys: {', '.join(known)}")


def string(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {shown(value)}")
    return value.strip()


def run_name(value: Any) -> str:
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value.strip()):
        raise ValueError(f"expected a name of letters, digits, '.', '_' and '-' (at most 100, starting with a "
                         f"letter or digit; it names the run directory), got {shown(value)}")
    return value.strip()


def default_name(source: Path | None) -> str:
    stem = source.stem if source else "experiment"
    return stem if NAME_PATTERN.fullmatch(stem) else "experiment"


def mapping(value: Any) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping, got {shown(value)}")
    return value


def list_of_mappings(value: Any) -> list:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise ValueError(f"expected a list of mappings, got {shown(value)}")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {shown(value)}")
    return value


def one_of(*choices: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or value.strip().lower() not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {shown(value)}")
        return value.strip().lower()

    return parse


def int_at_least(low: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ValueError(f"expected an integer >= {low}, got {shown(value)}")
        if value < low:
            raise ValueError(f"must be >= {low}, got {shown(value)}")
        return value

    return parse


def at_most(parse: Callable[[Any], Any], high: float) -> Callable[[Any], Any]:
    """``parse``, then an upper bound (sizes that would make the run allocate without end)."""

    def bounded(value: Any) -> Any:
        value = parse(value)
        if value > high:
            raise ValueError(f"must be <= {int(high) if float(high).is_integer() else high}, got {shown(value)}")
        return value

    return bounded


def number_at_least(low: float) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"expected a number >= {low:g}, got {shown(value)}")
        if value < low:
            raise ValueError(f"must be >= {low:g}, got {shown(value)}")
        return value

    return parse


def fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"expected a number in [0, 1], got {shown(value)}")
    return float(value)


def auto_or(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def wrapped(value: Any) -> Any:
        if value == "auto":
            return "auto"
        try:
            return parse(value)
        except ValueError as exc:
            raise ValueError(f"{exc} (or auto)") from None

    return wrapped


def memory(value: Any) -> str:
    text = str(value).strip().upper() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text or not (text.isdigit() or (text[:-1].isdigit() and text[-1] in "KMGT")):
        raise ValueError(f"expected a memory size like 4G or 4096M, got {shown(value)}")
    return text


def optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else parse(value)


def duration(value: Any) -> float:
    try:
        return parse_duration(value)
    except ValueError:
        raise ValueError(f"expected a duration (seconds, or like 90s, 30m, 2h), got {shown(value)}") from None


def durations(value: Any) -> float | tuple[float, ...]:
    """A duration, or a non-empty list of them (e.g. startups measured on a real run)."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("expected a duration or a non-empty list of durations, got []")
        return tuple(duration(v) for v in value)
    return duration(value)


def positive_duration(value: Any) -> float:
    seconds = duration(value)
    if seconds <= 0:
        raise ValueError(f"must be > 0, got {shown(value)}")
    return seconds


def entrance(value: Any) -> str | float:
    if isinstance(value, str) and value.strip().lower() in ("deadline", "adaptive", "none"):
        return value.strip().lower()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    raise ValueError(f"expected deadline, adaptive, none, or the fraction of the deadline spent exploring "
                     f"(0 < f <= 1), "
                     f"got {shown(value)}")


def scaling(value: Any, path: str, problems: list[str]) -> Scaling:
    nested: list[str] = []
    scaling = parse_scaling(value, path, nested)
    if scaling is None or nested:
        # parse_scaling names the path itself; strip it so _Section adds it once.
        raise ValueError("; ".join(p.split(": ", 1)[1] if p.startswith(path + ":") else p for p in nested))
    return scaling


def trainable_ref(value: Any) -> str:
    text = string(value)
    target, sep, function = text.rpartition(":")
    if not sep or not target or not function.isidentifier():
        raise ValueError(f"expected 'path/to/file.py:function' or 'module:function', got {shown(value)}")
    return text


def count_or_none(value: Any) -> int | None:
    """A count of at least 1, or none (null): no limit."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    try:
        return int_at_least(1)(value)
    except ValueError:
        raise ValueError(f"expected a count of at least 1 or none, got {shown(value)}") from None


def hang_timeout(value: Any) -> float | None:
    if isinstance(value, str) and value.strip().lower() in ("auto", "none"):
        return None if value.strip().lower() == "auto" else math.inf
    try:
        return positive_duration(value)
    except ValueError:
        raise ValueError(f"expected auto, none or a duration (like 10m), got {shown(value)}") from None
