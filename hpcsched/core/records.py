"""Journal records: every state change of a run, as typed frozen dataclasses.

The run's state is a replay of these records (``RunState.apply``); the same records are
fed to the scheduler, so a resumed controller rebuilds both exactly. On disk each record
is one JSON object with a ``kind`` field (see ``to_json`` / ``from_json``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Union

from hpcsched.core.errors import shown
from hpcsched.core.mode import Mode
from hpcsched.core.outcomes import ExitOutcome

JOURNAL_VERSION = 4  # 2: controller_stopped and run_extended records; 3: exited.retryable; 4: trial_created.from_model
# (3 and 4: fields written only when true, earlier journals read as before)


class FinishReason(str, Enum):
    """The planned ends of a run (``RunFinished.reason``); an interrupt or an abort records its own words."""

    DEADLINE = "deadline"
    NOTHING_LEFT = "nothing left to run"
    FAILURES = "failure budget"  # controller.max_failures launches in a row errored before their first report

    def __str__(self) -> str:
        return self.value

    @classmethod
    def planned(cls, reason: str | None) -> bool:
        """Whether a run that ended with ``reason`` ended as planned (not interrupted, aborted or given up)."""
        return reason in (cls.DEADLINE, cls.NOTHING_LEFT)


class StopIntent(str, Enum):
    """Why the controller asked a trial to checkpoint and exit (``StopRequested.intent``)."""

    PAUSE = "pause"  # it may be resumed later
    STOP = "stop"  # for good
    RESIZE = "resize"  # relaunched at once on another number of atoms
    DEADLINE = "deadline"  # the run's deadline (or the controller's own stop) is near
    RECOVER = "recover"  # a restarted controller takes over a trial it will relaunch

    def __str__(self) -> str:
        return self.value


class LaunchReason(str, Enum):
    """Why a trial was launched (``Launched.reason``)."""

    START = "start"
    RESUME = "resume"  # a promotion of a paused trial
    RESIZE = "resize"
    RECOVER = "recover"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class RunStarted:
    t: float
    name: str
    deadline: float  # absolute, on the run's clock
    atoms: int
    seed: int
    spec_digest: str
    variant: str
    atom_ids: tuple[str, ...] = ()
    metric: str = "score"
    mode: str = "max"  # max | min: how scores compare
    version: int = JOURNAL_VERSION
    kind: str = field(default="run_started", init=False)


@dataclass(frozen=True)
class TrialCreated:
    """A trial and its configuration. ``from_model`` (journal version 4, written only when true): the
    sampler's model proposed the configuration, rather than a random draw."""

    t: float
    trial: str
    index: int
    config: dict[str, Any]
    from_model: bool = False
    kind: str = field(default="trial_created", init=False)


@dataclass(frozen=True)
class Launched:
    """Atoms given to a trial and its process started, for a ``LaunchReason``."""

    t: float
    trial: str
    atoms: tuple[str, ...]
    reason: LaunchReason
    from_step: int = 0
    kind: str = field(default="launched", init=False)


@dataclass(frozen=True)
class Running:
    """The trial finished its setup (and checkpoint restore) after ``startup`` seconds."""

    t: float
    trial: str
    startup: float
    kind: str = field(default="running", init=False)


@dataclass(frozen=True)
class Reported:
    """A score; ``checkpoint`` names the checkpoint file saved with it ('' if none); ``metrics``
    are the other values the trial reported with it (``ctx.report(step, score, loss=...)``)."""

    t: float
    trial: str
    step: int
    score: float
    checkpoint: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    kind: str = field(default="reported", init=False)


@dataclass(frozen=True)
class StopRequested:
    """The controller asked a trial to checkpoint and exit, for a ``StopIntent`` (recover: a restarted
    controller takes over a trial it will relaunch on ``atoms`` atoms).

    For a resize, ``atoms`` is the new allocation size and ``extra`` the atoms reserved now for it.
    """

    t: float
    trial: str
    intent: StopIntent
    atoms: int = 0
    extra: tuple[str, ...] = ()
    reason: str = ""
    kind: str = field(default="stop_requested", init=False)


@dataclass(frozen=True)
class Exited:
    """The trial's process ended; ``outcome``: an ``ExitOutcome`` (checkpointed | finished | errored | diverged).
    ``retryable`` (journal version 3, written only when true): the error was the environment's (core/failures.py)."""

    t: float
    trial: str
    outcome: str
    step: int = 0
    error: str = ""
    retryable: bool = False  # errored for the environment: the trial is relaunched from its checkpoint
    kind: str = field(default="exited", init=False)


@dataclass(frozen=True)
class ControllerResumed:
    """A restarted controller took over the run (after recovering every live trial).

    ``atom_ids`` are the atoms it holds now (a new allocation may have other nodes).
    """

    t: float
    atom_ids: tuple[str, ...]
    host: str = ""
    pid: int = 0
    kind: str = field(default="controller_resumed", init=False)


@dataclass(frozen=True)
class EntranceClosed:
    """The scheduler stopped exploring: no new trials, no promotions from now on."""

    t: float
    reason: str = ""
    kind: str = field(default="entrance_closed", init=False)


@dataclass(frozen=True)
class ControllerStopped:
    """The controller stopped before the run ended (a signal: SIGTERM, SIGINT, Slurm's USR1 warning
    or preemption): every trial was checkpointed, and ``--resume`` (or a requeued job) goes on."""

    t: float
    reason: str
    kind: str = field(default="controller_stopped", init=False)


@dataclass(frozen=True)
class RunExtended:
    """``--resume --extend``: the run goes on to a later deadline (it may have finished or expired)."""

    t: float
    deadline: float  # the new deadline, absolute, on the run's clock
    by: float  # seconds asked for (the deadline moved from max(old deadline, t))
    previous_deadline: float = 0.0
    kind: str = field(default="run_extended", init=False)


@dataclass(frozen=True)
class RunFinished:
    t: float
    reason: str  # a FinishReason, or the words of an abort (version 1 journals: of an interrupt too)
    best_trial: str | None = None
    best_score: float | None = None
    best_step: int | None = None
    kind: str = field(default="run_finished", init=False)


Record = Union[RunStarted, TrialCreated, Launched, Running, Reported, StopRequested, Exited,
               ControllerResumed, EntranceClosed, RunFinished, ControllerStopped, RunExtended]

RECORD_TYPES: dict[str, type] = {
    cls.__dataclass_fields__["kind"].default: cls  # type: ignore[attr-defined]
    for cls in (RunStarted, TrialCreated, Launched, Running, Reported, StopRequested, Exited,
                ControllerResumed, EntranceClosed, RunFinished, ControllerStopped, RunExtended)
}
_TUPLE_FIELDS = {"atom_ids", "atoms", "extra"}
_ENUM_FIELDS: dict[tuple[type, str], type[Enum]] = {(Launched, "reason"): LaunchReason,
                                                     (StopRequested, "intent"): StopIntent,
                                                     (Exited, "outcome"): ExitOutcome,
                                                     (RunStarted, "mode"): Mode}
_OMITTED_WHEN_EMPTY = {"metrics", "retryable", "from_model"}  # written only when set (journals stay as small as before)
MAX_NESTING = 32  # how deep a record's mappings (a trial's config, a report's metrics) may nest


def _nested_at_most(value: Any, depth: int) -> bool:
    """Whether ``value``'s lists and mappings nest at most ``depth`` levels (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            if level > depth:
                return False
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return True


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# what each field's value must be, by its annotation (every field of every record has one: tested)
_VALUE_CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "float": ("a finite number", _is_number),
    "int": ("an integer", _is_int),
    "str": ("a string", lambda v: isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "tuple[str, ...]": ("a list of strings", lambda v: isinstance(v, tuple) and all(isinstance(x, str) for x in v)),
    "dict[str, Any]": (f"a mapping nested at most {MAX_NESTING} deep",
                       lambda v: isinstance(v, dict) and _nested_at_most(v, MAX_NESTING)),
}


def _value_check(annotation: str) -> tuple[str, Callable[[Any], bool]] | None:
    """What a field annotated ``annotation`` must hold (``X | None``: X or null); None for a vocabulary."""
    if annotation.endswith(" | None"):
        inner = _VALUE_CHECKS[annotation[: -len(" | None")]]
        return f"{inner[0]} or null", lambda v: v is None or inner[1](v)
    return _VALUE_CHECKS.get(annotation)


def _check_values(cls: type, values: dict[str, Any]) -> None:
    """ValueError naming the first field whose value is not of its annotated type."""
    for f in dataclasses.fields(cls):
        if f.name in values:
            check = _value_check(str(f.type))
            if check is not None and not check[1](values[f.name]):
                raise ValueError(f"{f.name} must be {check[0]}, got {shown(values[f.name])}")


def to_json(record: Record) -> dict[str, Any]:
    """A plain dict for JSON, ``kind`` first."""
    data = {"kind": record.kind}
    for f in dataclasses.fields(record):
        if f.name != "kind":
            value = getattr(record, f.name)
            if f.name in _OMITTED_WHEN_EMPTY and not value:
                continue
            data[f.name] = list(value) if isinstance(value, tuple) else value
    return data


def from_json(data: dict[str, Any]) -> Record:
    """Rebuild a record from its dict; raise ValueError naming the problem."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {data!r}")
    kind = data.get("kind")
    cls = RECORD_TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"unknown record kind {kind!r}")
    names = {f.name for f in dataclasses.fields(cls) if f.name != "kind"}
    values = {k: (tuple(v) if k in _TUPLE_FIELDS and isinstance(v, list) else v)
              for k, v in data.items() if k in names}
    try:
        _check_values(cls, values)
        for name in names:
            vocabulary = _ENUM_FIELDS.get((cls, name))
            if vocabulary is not None and name in values:
                values[name] = vocabulary(values[name])
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad {kind} record: {exc}") from None
