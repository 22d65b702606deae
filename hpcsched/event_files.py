"""TensorBoard event files of a trial's reports, so a run opens in the viewer ML users already know.

Written by the trial's chief rank, one file per launch in ``TrialPaths.tensorboard``, when
tensorboard is installed (``pip install 'hpcsched[tensorboard]'``); without it nothing is written.
Written with tensorboard's own event-file writer and protocol buffers, which import neither torch
nor TensorFlow (tensorboardX imports torch: a trial that does not use torch would pay for it).
``tensorboard --logdir RUN/trials`` then shows every trial's score and metrics against its step.
A file that cannot be written is logged once and the trial goes on: the journal holds the same figures.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import time
from pathlib import Path
from typing import Any, Mapping

log = logging.getLogger(__name__)


def available() -> bool:
    """Whether event files can be written here (tensorboard importable)."""
    return importlib.util.find_spec("tensorboard") is not None


class EventLog:
    """Scalars per report, written through tensorboard's ``EventFileWriter``.

    ``open`` imports tensorboard and creates the file (a third of a second cold): the trial calls it
    during its setup, so that the cost counts as startup rather than slowing its first steps."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._writer: Any = None
        self._failed = False

    def open(self) -> None:
        """Create the event file now (idempotent); a failure is logged and ends the event log."""
        if self._writer is not None or self._failed:
            return
        try:
            from tensorboard.summary.writer.event_file_writer import EventFileWriter

            self.directory.mkdir(parents=True, exist_ok=True)
            self._writer = EventFileWriter(str(self.directory))
        except OSError as exc:
            self._failed = True
            log.warning("no TensorBoard events for %s: %s", self.directory, exc)

    def add(self, step: int, scalars: Mapping[str, Any]) -> None:
        """One report's score and metrics (the finite numbers among them) at ``step``, flushed at once."""
        self.open()
        if self._failed:
            return
        try:
            from tensorboard.compat.proto.event_pb2 import Event
            from tensorboard.compat.proto.summary_pb2 import Summary

            values = [Summary.Value(tag=name, simple_value=float(value)) for name, value in scalars.items()
                      if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)]
            self._writer.add_event(Event(wall_time=time.time(), step=step, summary=Summary(value=values)))
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
    """An EventLog for ``directory``, or None where tensorboard is not installed."""
    return EventLog(directory) if available() else None
