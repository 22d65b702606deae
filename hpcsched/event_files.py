"""TensorBoard event files of a trial's reports, so a run opens in the viewer ML users already know.

Written by the trial's chief rank, one file per launch in ``TrialPaths.tensorboard``, when
tensorboardX is installed (``pip install 'hpcsched[tensorboard]'``); without it nothing is written.
``tensorboard --logdir RUN/trials`` then shows every trial's score and metrics against its step.
A file that cannot be written is logged once and the trial goes on: the journal holds the same figures.
"""

from __future__ import annotations

import importlib.util
import logging
import math
from pathlib import Path
from typing import Any, Mapping

log = logging.getLogger(__name__)


def available() -> bool:
    """Whether event files can be written here (tensorboardX importable)."""
    return importlib.util.find_spec("tensorboardX") is not None


class EventLog:
    """Scalars per report, written through tensorboardX's ``SummaryWriter`` (opened at the first report)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._writer: Any = None
        self._failed = False

    def add(self, step: int, scalars: Mapping[str, Any]) -> None:
        """One report's score and metrics (the finite numbers among them) at ``step``, flushed at once."""
        if self._failed:
            return
        try:
            if self._writer is None:
                from tensorboardX import SummaryWriter

                self.directory.mkdir(parents=True, exist_ok=True)
                self._writer = SummaryWriter(logdir=str(self.directory))
            for name, value in scalars.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    self._writer.add_scalar(name, value, global_step=step)
            self._writer.flush()
        except OSError as exc:
            self._failed = True
            log.warning("no more TensorBoard events for %s: %s", self.directory, exc)

    def close(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except OSError as exc:
                log.warning("closing the TensorBoard events of %s: %s", self.directory, exc)
            self._writer = None


def open_event_log(directory: Path) -> EventLog | None:
    """An EventLog for ``directory``, or None where tensorboardX is not installed."""
    return EventLog(directory) if available() else None
