"""The simulated executor: trials replay learning curves on a virtual clock.

A trial on ``a`` atoms advances ``s_true(a)`` one-atom seconds of work per second; every
start, resume and resize first costs ``startup`` seconds, and every step ``step_overhead``
seconds more whatever the atoms (what a real report costs: the checkpoint write, the verdict
round trip). A stop request is obeyed as a real trainable obeys it: at once when it comes at a
report of one of the launch's decision steps (a real trial waits there for the verdict), else
once the step (or the startup) in progress is done, that step reported and checkpointed; the
trial then holds its atoms ``stop_latency`` seconds more (a process's exit). Events wait in a heap of (time, seq, ...)
so ties come out first-in first-out.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from hpcsched.core.clock import Clock
from hpcsched.executors.base import Event, LaunchRequest, TrialExit, TrialReport, TrialStarted
from hpcsched.core.scaling import Scaling
from hpcsched.core.decision_steps import DecisionSteps
from hpcsched.rundir.scores import checkpoint_name
from hpcsched.core.outcomes import ExitOutcome
from hpcsched.workloads import Curve, Workload

_START, _STEP, _EXIT = 0, 1, 2


@dataclass
class _SimTrial:
    curve: Curve
    pos: int = 0  # reports done (index of the next report in the curve)
    rate: float = 0.0
    generation: int = 0
    active: bool = False
    decision_steps: DecisionSteps = DecisionSteps()
    stopping: bool = False  # asked to stop: exits after the step (or startup) in progress
    waits_at: float = -math.inf  # when it last reported a decision step (and waited there for the verdict)

    @property
    def step(self) -> int:
        return int(self.curve.steps[self.pos - 1]) if self.pos else 0


class SimExecutor:
    def __init__(self, workload: Workload, clock: Clock, scaling: Scaling, startup: float | tuple[float, ...],
                 step_overhead: float = 0.0, stop_latency: float = 0.0, rng: np.random.Generator | None = None):
        """``startup``: seconds per launch, or measured startups that each launch draws one of with
        ``rng`` (required then)."""
        if isinstance(startup, tuple) and rng is None:
            raise ValueError("drawing startups needs an rng")
        self.workload = workload
        self.step_overhead = step_overhead
        self.stop_latency = stop_latency
        self.clock = clock
        self.scaling = scaling
        self.startup = startup
        self._rng = rng
        self._heap: list[tuple[float, int, int, str, int]] = []
        self._seq = itertools.count()
        self._trials: dict[str, _SimTrial] = {}
        self._curves: dict[int, Curve] = {}

    def curve(self, index: int, config: Mapping[str, Any] | None = None) -> Curve:
        """The curve trial ``index`` (of configuration ``config``) replays (cached: the pool may be
        generated lazily; a synthetic curve may follow the config)."""
        curve = self._curves.get(index)
        if curve is None:
            curve = self._curves[index] = self.workload.curve(index, config)
        return curve

    def launch(self, request: LaunchRequest) -> None:
        trial = self._trials.get(request.trial_id)
        if trial is None:
            trial = self._trials[request.trial_id] = _SimTrial(self.curve(request.index, request.config))
        steps = trial.curve.steps
        trial.pos = int(steps.searchsorted(request.from_step, side="right"))
        trial.rate = self.scaling.rate(len(request.atoms))
        trial.generation += 1
        trial.active = True
        trial.stopping = False
        trial.decision_steps = request.decision_steps
        trial.waits_at = -math.inf
        self._push(self.clock.now() + self._next_startup(), _START, request.trial_id, trial.generation)

    def _next_startup(self) -> float:
        if isinstance(self.startup, tuple):
            assert self._rng is not None  # checked in __init__
            return float(self.startup[int(self._rng.integers(len(self.startup)))])
        return self.startup

    def request_stop(self, trial_id: str) -> None:
        trial = self._trials.get(trial_id)
        if trial is None or not trial.active or trial.stopping:
            return
        trial.stopping = True
        now = self.clock.now()
        if now <= trial.waits_at:  # waiting at a decision step's report for the verdict: leaves from there
            self._leave(trial_id, trial, now)
        # else the step or startup in progress ends first (its event is in the heap), then it leaves

    def poll(self, now: float) -> list[Event]:
        out: list[Event] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            t, _, kind, trial_id, generation = heapq.heappop(heap)
            trial = self._trials[trial_id]
            if generation != trial.generation:
                continue
            if kind == _STEP:
                trial.pos += 1
                if trial.step in trial.decision_steps:
                    trial.waits_at = t
                # every report is a checkpoint (a stop leaves the trial there): a trial killed at the
                # deadline exits at the step it reached
                out.append(TrialReport(trial_id, t, trial.step, float(trial.curve.scores[trial.pos - 1]),
                                       checkpoint_name(trial.step, "")))
                self._continue(trial_id, trial, t, out)
            elif kind == _START:
                out.append(TrialStarted(trial_id, t))
                if trial.stopping:
                    self._leave(trial_id, trial, t)
                else:
                    self._continue(trial_id, trial, t, out)
            else:
                trial.active = False
                out.append(TrialExit(trial_id, t, ExitOutcome.CHECKPOINTED, trial.step))
        return out

    def next_wakeup(self, now: float) -> float:
        heap = self._heap
        while heap and heap[0][4] != self._trials[heap[0][3]].generation:
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    spans_nodes = True  # simulated atoms have no nodes

    def decided(self) -> None:
        pass  # simulated trials stop exactly where they are told

    def recover(self, trial_id: str, launches: int, last_step: int, from_step: int) -> list[Event]:
        """A simulation is never resumed: nothing outlives it."""
        return []

    def shutdown(self) -> None:
        self._heap.clear()
        for trial in self._trials.values():
            trial.active = False

    def _continue(self, trial_id: str, trial: _SimTrial, t: float, out: list[Event]) -> None:
        """After a report (or the start): finish at the curve's end, else schedule the next step."""
        if trial.pos >= len(trial.curve.steps):
            trial.active = False
            trial.generation += 1
            out.append(TrialExit(trial_id, t, ExitOutcome.FINISHED, trial.step))
        elif trial.stopping:
            self._leave(trial_id, trial, t)
        else:
            self._schedule_step(trial_id, trial, t)

    def _leave(self, trial_id: str, trial: _SimTrial, t: float) -> None:
        """Exit, checkpointed at the last reported step, ``stop_latency`` after ``t``."""
        trial.generation += 1
        self._push(t + self.stop_latency, _EXIT, trial_id, trial.generation)

    def _schedule_step(self, trial_id: str, trial: _SimTrial, t: float) -> None:
        work = trial.curve.work
        done = work[trial.pos - 1] if trial.pos else 0.0
        duration = (work[trial.pos] - done) / trial.rate + self.step_overhead if trial.rate > 0 else math.inf
        self._push(t + float(duration), _STEP, trial_id, trial.generation)

    def _push(self, t: float, kind: int, trial_id: str, generation: int) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), kind, trial_id, generation))
