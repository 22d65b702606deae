"""The format of a trial's ``scores.jsonl``: one writer (the trial side), one validating reader
(the controller side).

Every launch of a trial appends JSON lines to ``trials/<id>/scores.jsonl``::

    {"kind":"started","t":...,"launch":"t0003-l2","token":"9f1c..."}
    {"kind":"report","t":...,"launch":"t0003-l2","token":"9f1c...","step":7,"score":0.81,"checkpoint":"step-00000007.pt"}
    {"kind":"exit","t":...,"launch":"t0003-l2","token":"9f1c...","outcome":"checkpointed","step":7}
    {"kind":"exit",...,"outcome":"errored","step":7,"error":"...OSError: [Errno 28]...","retryable":true}

``token`` is the launch's secret, given to its processes only, in their environment (TOKEN_VARIABLE):
a reader that knows it takes a line as the launch's only when it carries it, so another trial cannot
write lines in its name (another process of the same user can still read the environment or the
launch record that holds it: this attributes lines, it does not isolate users). Lines without a token
(written before launches had one) are read by a reader that knows none.

The file is written by the trial's process (any code the user runs), so the controller treats
it as input: ``parse_line`` turns each line into a typed line or a ``BadLine`` with the reason
(non-finite or non-numeric score, a step that is not an integer, a checkpoint name that is not
the trial's own file for that step, metrics that are not plain values, a line too long or
nested too deeply). Range checks that need the launch's history (step after the previous one,
at most R) are made by ``check_report``.

A metric that is not a finite number (a diverged loss) is data, not an error: it is written and
read as one of the words ``"nan"``, ``"inf"``, ``"-inf"`` (``metric_value``), so every line the
reader accepts is finite JSON that the journal can hold.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, TypeGuard, Union

from hpcsched.core.errors import shown
from hpcsched.core.outcomes import EXIT_OUTCOMES, ExitOutcome

log = logging.getLogger(__name__)

CHECKPOINT_PREFIX = "step-"
CHECKPOINT_SUFFIXES = (".pt", ".pkl")
MAX_LINE_BYTES = 64 * 1024  # a report line is ~150 bytes; metrics may add some
MAX_ERROR_CHARS = 4000
TOKEN_VARIABLE = "HPCSCHED_LAUNCH_TOKEN"  # the launch's secret, in its processes' environment
MAX_INT = 2**63 - 1  # integers a metric may hold (a 64-bit tensor's .item() at most)
NON_FINITE_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}  # a non-finite metric, as written


_CHECKPOINT_NAME = re.compile(r"step-(\d{8})\.(pt|pkl)")


def checkpoint_name(step: int, suffix: str) -> str:
    """The file name of the checkpoint saved at ``step`` (suffix ".pt", ".pkl" or "")."""
    return f"{CHECKPOINT_PREFIX}{step:08d}{suffix}"


def checkpoint_step(name: str) -> int | None:
    """The step of a checkpoint file name written by ``checkpoint_name``; None for any other name."""
    match = _CHECKPOINT_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class StartedLine:
    """The launch finished its setup and restore; training starts."""

    launch: str
    t: float
    token: str = ""  # the launch's secret (TOKEN_VARIABLE)


@dataclass(frozen=True)
class ReportLine:
    launch: str
    t: float
    step: int
    score: float
    checkpoint: str = ""  # file name in the trial's checkpoints/, saved with this report
    metrics: dict[str, Any] = field(default_factory=dict)
    token: str = ""


@dataclass(frozen=True)
class ExitLine:
    """How the launch's trainable ended, written by the trial's process just before it exits."""

    launch: str
    t: float
    outcome: str  # one of EXIT_OUTCOMES
    step: int = 0  # the step of its last checkpoint
    error: str = ""
    token: str = ""
    retryable: bool = False  # errored for the environment (a full disk...), not for the trainable


@dataclass(frozen=True)
class BadLine:
    """A line of this launch that the controller refuses, and why."""

    launch: str
    reason: str
    token: str = ""  # the token the refused line carried


ScoreLine = Union[StartedLine, ReportLine, ExitLine]


# ---------------------------------------------------------------- writing (trial side)


def format_line(line: ScoreLine) -> str:
    """One line of the file, newline included (finite JSON only)."""
    data: dict[str, Any] = {"kind": "", "t": line.t, "launch": line.launch}
    if line.token:
        data["token"] = line.token
    if isinstance(line, StartedLine):
        data["kind"] = "started"
    elif isinstance(line, ReportLine):
        data.update(kind="report", step=line.step, score=line.score)
        if line.checkpoint:
            data["checkpoint"] = line.checkpoint
        if line.metrics:
            data["metrics"] = {name: metric_value(value) for name, value in line.metrics.items()}
    else:
        data.update(kind="exit", outcome=line.outcome, step=line.step)
        if line.error:
            data["error"] = line.error[-MAX_ERROR_CHARS:]
        if line.retryable:
            data["retryable"] = True
    return json.dumps(data, separators=(",", ":"), allow_nan=False) + "\n"


def append_line(path: Path, line: ScoreLine) -> None:
    """Append one line durably; a torn last line left by a killed writer is ended first."""
    text = format_line(line).encode("utf-8")
    with open(path, "ab+") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                text = b"\n" + text
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


# ---------------------------------------------------------------- reading (controller side)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any) -> float | None:
    """``value`` as a finite float; None for anything else (a string, a bool, NaN, an int too large)."""
    if not _is_number(value):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _time(data: dict[str, Any]) -> float:
    t = _finite(data.get("t"))
    return math.nan if t is None else t


def metric_value(value: Any) -> Any:
    """A metric as it is written: a non-finite float becomes its word (``"nan"``, ``"inf"``, ``"-inf"``),
    an integer beyond 64 bits a float."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        try:
            value = float(value)
        except OverflowError:
            return "inf" if value > 0 else "-inf"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def metric_number(value: Any) -> Any:
    """A metric as a number where it is one (the words of ``metric_value`` back to floats); else as it is."""
    if isinstance(value, str) and value in NON_FINITE_WORDS:
        return NON_FINITE_WORDS[value]
    return value


def _metrics(raw: Any, step: int) -> dict[str, Any] | str:
    """The metrics of a report line (names to numbers, strings, booleans or nulls), or why they are refused."""
    if not isinstance(raw, Mapping):
        return f"report metrics {shown(raw)} at step {step} are not a mapping of names to values"
    metrics: dict[str, Any] = {}
    for name, value in raw.items():
        if value is not None and not isinstance(value, (bool, int, float, str)):
            return f"report metric {shown(name)} at step {step} is {shown(value)}, not a number, string or null"
        metrics[name] = metric_value(value)
    return metrics


def parse_line(raw: bytes) -> ScoreLine | BadLine | None:
    """A typed line; a BadLine (with the launch it names) when it breaks the format; None for
    a line that names no launch (garbage, a torn write): nothing to attribute it to."""
    if len(raw) > MAX_LINE_BYTES:
        launch = _named(raw, "launch")
        if launch is None:
            return None
        return BadLine(launch, f"a scores line of {len(raw)} bytes (at most {MAX_LINE_BYTES})",
                       _named(raw, "token") or "")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    except RecursionError:  # nested deeper than the parser goes: refused if it names a launch
        launch = _named(raw, "launch")
        return None if launch is None else BadLine(launch, "a scores line nested too deeply to read",
                                                   _named(raw, "token") or "")
    if not isinstance(data, dict) or not isinstance(data.get("launch"), str):
        return None
    token = data.get("token", "")
    line = _typed(data, data["launch"])
    return replace(line, token=token) if isinstance(token, str) and token else line


def _typed(data: dict[str, Any], launch: str) -> ScoreLine | BadLine:
    """The typed line of a parsed object that names a launch (without its token)."""
    kind = data.get("kind")
    t = _time(data)
    if kind == "started":
        return StartedLine(launch, t)
    if kind == "report":
        step, score, checkpoint = data.get("step"), _finite(data.get("score")), data.get("checkpoint", "")
        if not _is_int(step):
            return BadLine(launch, f"report step {shown(step)} is not an integer")
        if score is None:
            return BadLine(launch, f"report score {shown(data.get('score'))} at step {step} is not a finite number")
        if not isinstance(checkpoint, str) or (checkpoint and checkpoint_step(checkpoint) != step):
            return BadLine(launch, f"report checkpoint {shown(checkpoint)} at step {step} is not "
                                   f"{checkpoint_name(step, '.pt|.pkl')} in the trial's checkpoints/")
        metrics = _metrics(data.get("metrics", {}), step)
        if isinstance(metrics, str):
            return BadLine(launch, metrics)
        return ReportLine(launch, t, step, score, checkpoint, metrics)
    if kind == "exit":
        outcome, step, error = data.get("outcome"), data.get("step", 0), data.get("error", "")
        if not isinstance(outcome, str) or outcome not in EXIT_OUTCOMES:
            return BadLine(launch, f"exit outcome {shown(outcome)} is not one of {', '.join(EXIT_OUTCOMES)}")
        if not _is_int(step):
            return BadLine(launch, f"exit step {shown(step)} is not an integer")
        if not isinstance(error, str):
            return BadLine(launch, f"exit error {shown(error)} is not a string")
        return ExitLine(launch, t, ExitOutcome(outcome), step, error[-MAX_ERROR_CHARS:],
                        retryable=data.get("retryable") is True and outcome == ExitOutcome.ERRORED)
    return BadLine(launch, f"unknown kind {shown(kind)}")


def _named(raw: bytes, key: str) -> str | None:
    """The launch (or token) a line names near its start, found without parsing it (a line too long or too deep)."""
    match = re.search(rb'"' + key.encode() + rb'"\s*:\s*"([A-Za-z0-9._-]{1,100})"', raw[:4096])
    return match.group(1).decode() if match else None


def check_report(line: ReportLine, last_step: int, max_steps: int) -> BadLine | None:
    """Why a report cannot follow ``last_step`` in a trial of ``max_steps`` steps (None: it can)."""
    if line.step <= last_step:
        return BadLine(line.launch, f"report step {line.step} does not follow step {last_step}")
    if line.step > max_steps:
        return BadLine(line.launch, f"report step {line.step} is past the trial's last step {max_steps}")
    return None


class ScoresReader:
    """Yields the new complete lines of one launch (``launch_id``; None: of every launch),
    parsed; a partial last line waits for the next read. Keeps a byte offset, never re-reads.
    With the launch's ``token``, a line naming the launch without it is skipped with a warning:
    another process wrote it (it is not the launch's, not even to be refused in its name)."""

    def __init__(self, path: Path, launch_id: str | None, offset: int = 0, token: str | None = None):
        self.path = Path(path)
        self.launch_id = launch_id
        self.token = token
        self.offset = offset
        self._in_long_line = False  # inside a line already refused for its length: skip to its end

    def read(self) -> list[ScoreLine | BadLine]:
        # open, then fstat: on NFS an open revalidates the file's cached size and pages with the
        # server (close-to-open consistency), a bare stat may answer from an attribute cache
        # that is seconds old
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return []
        with f:
            size = os.fstat(f.fileno()).st_size
            if size <= self.offset:
                return []
            f.seek(self.offset)
            data = f.read(size - self.offset)
        lines: list[ScoreLine | BadLine] = []
        if self._in_long_line:
            end = data.find(b"\n")
            if end < 0:
                self.offset += len(data)
                return []
            self._in_long_line = False
            self.offset += end + 1
            data = data[end + 1:]
        end = data.rfind(b"\n")
        complete, rest = data[: end + 1], data[end + 1:]
        self.offset += len(complete)
        for raw in complete.split(b"\n"):
            if raw.strip():
                self._take(parse_line(raw), raw, lines)
        if len(rest) > MAX_LINE_BYTES:  # refuse a line that is too long before it even ends
            self._take(parse_line(rest), rest, lines)
            self._in_long_line = True
            self.offset += len(rest)
        return lines

    def _take(self, line: ScoreLine | BadLine | None, raw: bytes, lines: list[ScoreLine | BadLine]) -> None:
        if line is None:
            log.warning("%s: skipped a line that is not a scores line: %r", self.path, raw[:80])
        elif self.launch_id is None or line.launch == self.launch_id:
            if self.token is not None and line.token != self.token:
                log.warning("%s: skipped a line in the name of launch %s without its token (another process "
                            "wrote it): %r", self.path, line.launch, raw[:80])
                return
            lines.append(line)
