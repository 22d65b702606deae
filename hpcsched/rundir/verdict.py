"""The verdict file: the controller's answer to a trial waiting after a report.

At a decision step (core.decision_steps.DecisionSteps) a trial's chief rank writes its report
and checkpoint, then waits until ``launches/<launch>.verdict`` names that step (or a later one)
or a stop signal arrives, at most ``verdict_timeout`` seconds (then it goes on)::

    {"step": 8, "verdict": "continue" | "stop"}

Written by the controller side only (atomically: temp file + rename), read by the trial.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from pathlib import Path


class Verdict(str, enum.Enum):
    CONTINUE = "continue"
    STOP = "stop"


@dataclass(frozen=True)
class VerdictLine:
    step: int
    verdict: Verdict


def write_verdict(path: Path, step: int, verdict: Verdict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"step": step, "verdict": verdict.value}))
    os.replace(tmp, path)


def read_verdict(path: Path) -> VerdictLine | None:
    """The verdict now in the file; None when there is none (yet) or it is unreadable."""
    try:
        data = json.loads(path.read_text())
        return VerdictLine(int(data["step"]), Verdict(data["verdict"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
