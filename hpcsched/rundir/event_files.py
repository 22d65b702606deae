"""TensorBoard event files of a trial's reports, so a run opens in the viewer ML users already know.

Written by the trial's chief rank, one file per launch in ``TrialPaths.tensorboard``, when
tensorboard is installed (``pip install 'hpcsched[tensorboard]'``); without it nothing is written.
Written with tensorboard's own event-file writer and protocol buffers, which import neither torch
nor TensorFlow (tensorboardX imports torch: a trial that does not use torch would pay for it).
``tensorboard --logdir RUN/trials`` then shows every trial's score and metrics against its step, and
its HParams dashboard every trial's configuration beside its metrics (each file starts with the
trial's configuration as the HParams plugin's session-start summary, built from tensorboard's protocol
buffers, as ``tensorboard.plugins.hparams.summary.session_start_pb`` builds it without TensorFlow).
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

    def __init__(self, directory: Path, hparams: Mapping[str, Any] | None = None, group: str = ""):
        self.directory = directory
        self.hparams = dict(hparams or {})
        self.group = group  # the HParams session group: the trial
        self._writer: Any = None
        self._failed = False
        self._started = False

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

            if not self._started:  # the configuration first: TensorBoard's HParams dashboard reads it
                self._started = True
                self._writer.add_event(Event(wall_time=time.time(), step=0,
                                             summary=session_start(self.hparams, self.group)))
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


def hparam_values(config: Mapping[str, Any], prefix: str = "") -> dict[str, bool | float | str]:
    """A configuration as HParams values: nested mappings flattened (``opt.lr``), numbers, booleans and
    text kept, anything else (lists, None) as its text."""
    out: dict[str, bool | float | str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(hparam_values(value, f"{name}."))
        elif isinstance(value, (bool, str)):
            out[name] = value
        elif isinstance(value, (int, float)):
            out[name] = float(value)
        else:
            out[name] = str(value)
    return out


def session_start(config: Mapping[str, Any], group: str) -> Any:
    """The HParams plugin's session-start summary of ``config`` (what ``session_start_pb`` writes)."""
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.compat.proto.types_pb2 import DT_FLOAT
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2

    info = plugin_data_pb2.SessionStartInfo(group_name=group, start_time_secs=time.time())
    for name, value in hparam_values(config).items():
        if isinstance(value, bool):
            info.hparams[name].bool_value = value
        elif isinstance(value, float):
            info.hparams[name].number_value = value
        else:
            info.hparams[name].string_value = value
    data = plugin_data_pb2.HParamsPluginData(session_start_info=info)
    empty = TensorProto(dtype=DT_FLOAT, tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=0)]))
    return Summary(value=[Summary.Value(tag=metadata.SESSION_START_INFO_TAG,
                                        metadata=metadata.create_summary_metadata(data), tensor=empty)])


def open_event_log(directory: Path, hparams: Mapping[str, Any] | None = None, group: str = "") -> EventLog | None:
    """An EventLog for ``directory`` (``hparams``: the trial's configuration, for the HParams dashboard),
    or None where tensorboard is not installed."""
    return EventLog(directory, hparams, group) if available() else None
