"""The peers' figures of DESIGN.md §8 measured again: Syne Tune's schedulers in its own simulator on the shared traces.

Syne Tune is not a dependency of hpcsched: run this in an environment of its own, e.g.

    python3 -m venv /tmp/st && /tmp/st/bin/pip install 'syne-tune[blackbox-repository,kde]==0.14.2' 'pandas==2.2.3'
    /tmp/st/bin/python tools/bench_peers.py [--seeds 40] [--curves DIR] [--out docs/results/peers.md]

(pandas 3 breaks Syne Tune 0.14.2's tabular lookup; its searcher factory imports torch for BoTorch,
which this replay never uses, so without torch that one module is replaced by an empty stand-in.)
Each trace becomes a tabular blackbox (one categorical parameter, the curve; fidelity epoch 1..R;
elapsed time 30 s per epoch, cumulative) replayed by ``UserBlackboxBackend`` + ``SimulatorCallback``
with 8 workers and ``StoppingCriterion(max_wallclock_time=T)``: random search (legacy, every trial to
R, curves without replacement) and ASHA (legacy, promotion and stopping, eta 4, grace period r). It
prints and writes the mean best score (the maximum of Syne Tune's results, as its own figures count
it) with its standard error, over seeds 0..4 (the DESIGN table's) and 0..N-1.

With ``--lcbench`` it replays instead every LCBench task under ``CURVES/lcbench`` (``lcbench-TASK.csv``:
trial,step,score,time with time cumulative seconds on one worker; ``lcbench-TASK-configs.csv``: each
trial's 7 hyperparameters) by the one bench rule (tools/bench_rule.py, the 'plain' system: R = the longest
curve's last step, r = 1, eta = 4, 8 workers, no startup, no scaling, deadlines 2M, 4M, 8M with M the
median time to a curve's last step; metric mode max) and writes docs/results/peers-lcbench.md, and its
cells (mean best score, standard error, seeds per task, deadline and scheduler) to peers-lcbench-cells.csv
beside it, which ``tools/bench_samplers.py --peers`` shows beside ours.
MOBSTER, Hyper-Tune and DyHPO need autograd (syne-tune's gpsearchers extra), so install that too:

    /tmp/st/bin/pip install 'syne-tune[blackbox-repository,kde,gpsearchers]==0.14.2' 'pandas==2.2.3'
    nice -n 10 /tmp/st/bin/python tools/bench_peers.py --lcbench --seeds 20 --raw /tmp/peers-lcbench.csv \
        --schedulers random asha bohb=10 dehb mobster=5@167149,167181,189862 hypertune=5@167149,167181,189862 \
        dyhpo=5

(the page's command: ``NAME=N``: seeds 0..N-1 for that scheduler, else ``--seeds``; ``NAME=N@TASK,TASK``:
on those tasks only; ``--tasks 7593 167149``: only those tasks at all. ``--raw`` keeps every run's
row: runs already in it are not rerun, so a command cut short, or one asking for more, runs only what is
missing; the page is written from its rows for what the command asks. One replay to 8M took on average
0.2 s (random), 0.5 s (ASHA), 0.5 s (DEHB), 9.5 s (BOHB), 63 s (DyHPO), 131 s (Hyper-Tune), 163 s (MOBSTER)
on the 2-core development machine on lcbench-167149 and -167181, and MOBSTER 719 s on lcbench-167152,
whence MOBSTER and Hyper-Tune on three tasks only; DyHPO took 53-609 s on the others.)
Each task is a tabular blackbox whose configuration space is LCBench's own (batch size, learning rate,
max dropout, max units, momentum, number of layers, weight decay; the searchers see these values as
features), fidelity epoch 1..R, elapsed time the trace's cumulative time column. Every searcher chooses
among the recorded configurations only, each at most once (``restrict_configurations``; legacy BOHB's
KDE searcher ignores that option, so here each of its candidates is moved to the nearest recorded,
not yet started configuration in its own [0, 1] feature encoding, and its random draws come from those
configurations). Schedulers, Syne Tune's legacy baselines with their defaults otherwise: random search
(every trial to R) and, promotion type with grace period r = 1 and eta 4 (rungs 1, 4, 16, then R),
ASHA, BOHB, MOBSTER (GP multi-task), Hyper-Tune, and DyHPO (its rungs by the rule's eta, not its
linear default); and DEHB (Awad et al., 2021: differential evolution in synchronous Hyperband's brackets,
grace period r, eta 4), Syne Tune's, so that it runs in the same simulator as the others (the PyPI
``dehb`` package's ask-and-tell would need a simulator of its own). DEHB knows no
``restrict_configurations``: its random draws are recorded configurations not yet started, and each
configuration its mutation and crossover make becomes the nearest one not yet started in its own [0, 1]
encoding (a promotion keeps its configuration). Once every recorded configuration has started, Syne Tune's
Tuner schedules nothing more (not even a promotion): the page counts the runs where that happened by
each deadline. One replay per (task, scheduler, seed) runs to 8M: none of these schedulers knows the
deadline, so its results up to 2M and 4M are those of a replay stopped there; a run's score at deadline
T is the best score among Syne Tune's results whose simulated time is at most T.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import random
import sys
import tempfile
import time
import types
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
CURVES = REPO.parent / "shared" / "data" / "curves"
OUT = REPO / "docs" / "results" / "peers.md"
DEADLINES = (900, 1800, 3600)
TRACES = {"cifar10-resnets": (50, 2), "cifar10-metaqnn": (20, 1)}  # name: (R, r)
SCHEDULERS = ("random", "asha-promotion", "asha-stopping")
WORKERS, EPOCH_SECONDS, ETA = 8, 30.0, 4


def _without_botorch() -> None:
    """Syne Tune's searcher factory imports its BoTorch searcher, which imports torch: stand in for it."""
    for name in ("syne_tune.optimizer.schedulers.searchers.botorch",
                 "syne_tune.optimizer.schedulers.searchers.botorch.botorch_searcher"):
        module = types.ModuleType(name)
        module.BoTorchSearcher = type("BoTorchSearcher", (), {})  # type: ignore[attr-defined]
        module.__path__ = []  # type: ignore[attr-defined]
        sys.modules.setdefault(name, module)


def blackbox(curves: Path, trace: str, R: int):
    from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular
    from syne_tune.config_space import choice, randint

    frame = pd.read_csv(curves / f"{trace}.csv").pivot(index="trial", columns="step", values="score").loc[:, 1:R]
    names = [str(n) for n in frame.index]
    objectives = np.zeros((len(names), 1, R, 2))
    objectives[:, 0, :, 0] = frame.to_numpy()
    objectives[:, 0, :, 1] = EPOCH_SECONDS * np.arange(1, R + 1)[None, :]
    space = {"trial": choice(names)}
    return BlackboxTabular(hyperparameters=pd.DataFrame({"trial": names}), configuration_space=space,
                           fidelity_space={"epoch": randint(1, R)}, objectives_evaluations=objectives,
                           objectives_names=["score", "elapsed_time"]), space


def best_score(curves: Path, trace: str, scheduler: str, deadline: float, seed: int) -> float:
    """One replay; the best score Syne Tune's results hold."""
    from syne_tune import StoppingCriterion, Tuner
    from syne_tune.backend.simulator_backend.simulator_callback import SimulatorCallback
    from syne_tune.blackbox_repository.simulated_tabular_backend import UserBlackboxBackend
    from syne_tune.optimizer.legacy_baselines import ASHA, RandomSearch

    R, r = TRACES[trace]
    bb, space = blackbox(curves, trace, R)
    max_resource = None
    if scheduler == "random":
        chosen = RandomSearch(space, metric="score", mode="max", random_seed=seed)
    else:
        max_resource = "epochs"
        space = dict(space, epochs=R)
        chosen = ASHA(space, metric="score", mode="max", resource_attr="epoch", max_resource_attr=max_resource,
                      grace_period=r, reduction_factor=ETA, random_seed=seed,
                      type="promotion" if scheduler == "asha-promotion" else "stopping")
    backend = UserBlackboxBackend(blackbox=bb, elapsed_time_attr="elapsed_time", max_resource_attr=max_resource)
    tuner = Tuner(trial_backend=backend, scheduler=chosen,
                  stop_criterion=StoppingCriterion(max_wallclock_time=deadline), n_workers=WORKERS, sleep_time=0,
                  callbacks=[SimulatorCallback()], results_update_interval=1e9, print_update_interval=1e9,
                  save_tuner=False, tuner_name=f"{trace}-{scheduler}-{int(deadline)}-{seed}")
    tuner.run()
    return float(tuner.callbacks[0].dataframe()["score"].max())


# --- LCBench: the bench rule's replays with each trial's real hyperparameters -------------------------

LCBENCH_DIR = "lcbench"
LCBENCH_OUT = REPO / "docs" / "results" / "peers-lcbench.md"
DEADLINE_FACTORS = (2, 4, 8)  # times M (tools/bench_rule.py)
FIRST_RUNG = 1
# LCBench's configuration space (Zimmer et al., 2021), the ranges its 2000 configurations were drawn from
LCBENCH_SPACE = {"batch_size": ("lograndint", 16, 512), "learning_rate": ("loguniform", 1e-4, 1e-1),
                 "max_dropout": ("uniform", 0.0, 1.0), "max_units": ("lograndint", 64, 1024),
                 "momentum": ("uniform", 0.1, 0.99), "num_layers": ("randint", 1, 5),
                 "weight_decay": ("uniform", 1e-5, 1e-1)}
LCBENCH_SCHEDULERS = ("random", "asha", "bohb", "mobster", "hypertune", "dyhpo", "dehb")


@dataclass(frozen=True)
class Task:
    """One LCBench task as the bench rule replays it."""

    name: str  # e.g. lcbench-7593
    R: int
    M: float  # median seconds to a curve's last step on one worker
    configs: list[dict]  # row i: curve i's hyperparameters
    scores: np.ndarray  # (curves, R)
    times: np.ndarray  # (curves, R), cumulative seconds

    @property
    def deadlines(self) -> tuple[float, ...]:
        return tuple(round(k * self.M, 3) for k in DEADLINE_FACTORS)


def lcbench_files(curves: Path) -> list[Path]:
    return sorted(p for p in (curves / LCBENCH_DIR).glob("lcbench-*.csv") if not p.stem.endswith("-configs"))


def lcbench_task(path: Path) -> Task:
    """The task of ``path`` (its configurations beside it); R and M as tools/bench_rule.py derives them."""
    frame = pd.read_csv(path).sort_values(["trial", "step"], kind="stable")
    frame["trial"] = frame["trial"].astype(str)
    last = frame.groupby("trial", sort=True).last()
    R, M = int(last["step"].max()), float(np.median(last["time"]))
    scores = frame.pivot(index="trial", columns="step", values="score")
    times = frame.pivot(index="trial", columns="step", values="time")
    if list(scores.columns) != list(range(1, R + 1)) or scores.isna().any().any():
        raise ValueError(f"{path}: every curve must have steps 1..{R} (a curve shorter than R cannot be a row)")
    table = pd.read_csv(path.with_name(f"{path.stem}-configs.csv"))
    table["trial"] = table["trial"].astype(str)
    table = table.set_index("trial").reindex(scores.index)
    if table.isna().any().any() or sorted(table.columns) != sorted(LCBENCH_SPACE):
        raise ValueError(f"{path}: the configs file needs columns trial,{','.join(LCBENCH_SPACE)} for every trial")
    for name, (_, low, high) in LCBENCH_SPACE.items():
        if not table[name].between(low, high).all():
            raise ValueError(f"{path}: {name} outside LCBench's range [{low}, {high}]")
    configs = [{name: int(row[name]) if "int" in kind else float(row[name])
                for name, (kind, _, _) in LCBENCH_SPACE.items()} for _, row in table.iterrows()]
    return Task(path.stem, R, M, configs, scores.to_numpy(float), times.to_numpy(float))


def lcbench_blackbox(task: Task):
    """A tabular blackbox: LCBench's space, one row per curve, fidelity epoch 1..R, cumulative time."""
    from syne_tune import config_space as cs
    from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular

    space = {name: getattr(cs, kind)(low, high) for name, (kind, low, high) in LCBENCH_SPACE.items()}
    objectives = np.stack([task.scores, task.times], axis=-1)[:, None, :, :]  # (curves, seed, epoch, 2)
    return BlackboxTabular(hyperparameters=pd.DataFrame(task.configs, columns=list(LCBENCH_SPACE)),
                           configuration_space=space, fidelity_space={"epoch": cs.randint(1, task.R)},
                           objectives_evaluations=objectives, objectives_names=["score", "elapsed_time"]), space


def _recorded_kde(searcher, configs: list[dict]) -> None:
    """Make legacy BOHB's KDE searcher choose among ``configs``, each once (it ignores restrict_configurations).

    Its random draws come from the configurations not yet started (the base class's own
    restrict_configurations path); each candidate it samples from its good-configuration KDE becomes the
    nearest configuration not yet started in its own [0, 1] feature encoding, and its acquisition picks
    among those as before."""
    from syne_tune.config_space import Domain

    base = type(searcher)
    constants = {k: v for k, v in searcher.config_space.items() if not isinstance(v, Domain)}

    class RecordedKDE(base):  # type: ignore[misc, valid-type]
        def _from_feature(self, feature_vector):
            free = np.flatnonzero(self._free)
            distance = ((self._features[free] - np.asarray(feature_vector, dtype=float)) ** 2).sum(axis=1)
            return dict(constants, **configs[free[int(np.argmin(distance))]])

        def get_config(self, **kwargs):
            if not self._free.any():
                return None
            config = super().get_config(**kwargs)
            if config is not None:
                key = tuple(config[k] for k in LCBENCH_SPACE)
                self._free[self._rows[key]] = False
                self._restrict_configurations = [c for c in self._restrict_configurations
                                                 if tuple(c[k] for k in LCBENCH_SPACE) != key]
            return config

    searcher.__class__ = RecordedKDE
    searcher._restrict_configurations = [dict(constants, **c) for c in configs]
    searcher._rc_returned_pos = set()
    searcher._rows = {tuple(c[k] for k in LCBENCH_SPACE): i for i, c in enumerate(configs)}
    searcher._features = np.array([searcher._to_feature(c) for c in configs], dtype=float)
    searcher._free = np.ones(len(configs), dtype=bool)
    # its default first suggestion, the space's midpoint, is no recorded configuration (as the others do)
    searcher._points_to_evaluate = [c for c in searcher._points_to_evaluate
                                    if tuple(c.get(k) for k in LCBENCH_SPACE) in searcher._rows]


def _recorded_de(scheduler, configs: list[dict]) -> None:
    """Make DEHB choose among ``configs``, each once (it knows no restrict_configurations).

    Its random draws are configurations not yet started; each mutant it makes becomes the nearest
    configuration not yet started in its own [0, 1] encoding; a promotion keeps its configuration. Once
    every configuration has started, a new slot is reported as failed (its bracket promotes on)."""
    base = type(scheduler)
    encoded = np.array([scheduler._hp_ranges.to_ndarray(c) for c in configs], dtype=float)
    rows = {e.tobytes(): i for i, e in enumerate(encoded)}
    free = np.ones(len(configs), dtype=bool)
    row_of: dict[int, int] = {}  # trial_id -> its configuration's row

    class RecordedDE(base):  # type: ignore[misc, valid-type]
        def _encoded_config_from_searcher(self, trial_id):
            left = np.flatnonzero(free)
            return encoded[left[self.random_state.randint(len(left))]].copy() if len(left) else None

        def _register_new_config_and_make_suggestion(self, trial_id, ext_slot, encoded_config):
            row = rows.get(np.asarray(encoded_config, dtype=float).tobytes())
            if row is None or free[row]:  # (a new configuration: the nearest not yet started)
                left = np.flatnonzero(free)
                if not len(left):
                    self._report_as_failed(ext_slot)
                    return None
                if row is None:
                    row = int(left[np.argmin(((encoded[left] - encoded_config) ** 2).sum(axis=1))])
                free[row] = False
            row_of[trial_id] = row
            suggestion = super()._register_new_config_and_make_suggestion(trial_id, ext_slot, encoded[row].copy())
            suggestion.config = dict(suggestion.config, **configs[row])  # (the recorded values, not decoded ones)
            return suggestion

        def _promote_trial_and_make_suggestion(self, trial_id, ext_slot):
            suggestion = super()._promote_trial_and_make_suggestion(trial_id, ext_slot)
            if suggestion.config is not None:
                suggestion.config = dict(suggestion.config, **configs[row_of[trial_id]])
            return suggestion

    scheduler.__class__ = RecordedDE


def lcbench_scheduler(name: str, task: Task, space: dict, seed: int):
    """Syne Tune's legacy scheduler ``name``, restricted to the task's recorded configurations."""
    from syne_tune.optimizer import legacy_baselines as lb

    common = {"metric": "score", "mode": "max", "random_seed": seed}
    restrict = {"restrict_configurations": [dict(c) for c in task.configs]}
    if name == "random":
        return lb.RandomSearch(space, search_options=restrict, **common)
    space = dict(space, epochs=task.R)
    hyperband = {"resource_attr": "epoch", "max_resource_attr": "epochs", "grace_period": FIRST_RUNG,
                 "reduction_factor": ETA, **common}
    model = dict(restrict, skip_local_optimization=True, debug_log=False)
    if name == "asha":
        return lb.ASHA(space, type="promotion", search_options=restrict, **hyperband)
    if name == "bohb":
        scheduler = lb.BOHB(space, type="promotion", search_options={"debug_log": False}, **hyperband)
        _recorded_kde(scheduler.searcher, task.configs)
        return scheduler
    if name == "mobster":
        return lb.MOBSTER(space, type="promotion", search_options=model, **hyperband)
    if name == "hypertune":
        return lb.HyperTune(space, type="promotion", search_options=model, **hyperband)
    if name == "dyhpo":
        return lb.DyHPO(space, search_options=model, **hyperband)
    if name == "dehb":  # (synchronous Hyperband's brackets; grace period r, eta)
        scheduler = lb.DEHB(space, **hyperband)
        _recorded_de(scheduler, task.configs)
        return scheduler
    raise ValueError(f"unknown scheduler {name!r}; one of {', '.join(LCBENCH_SCHEDULERS)}")


def lcbench_run(task: Task, scheduler: str, seed: int) -> list[dict]:
    """One replay to the last deadline; a row per deadline: the best score by then, trials started, seconds."""
    from syne_tune import StoppingCriterion, Tuner
    from syne_tune.backend.simulator_backend.simulator_callback import SimulatorCallback
    from syne_tune.blackbox_repository.simulated_tabular_backend import UserBlackboxBackend
    from syne_tune.constants import ST_TUNER_TIME

    np.random.seed(seed)  # BOHB's KDE and the GP searchers' initial parameters draw from the global generators
    random.seed(seed)
    bb, space = lcbench_blackbox(task)
    chosen = lcbench_scheduler(scheduler, task, space, seed)
    backend = UserBlackboxBackend(blackbox=bb, elapsed_time_attr="elapsed_time",
                                  max_resource_attr=None if scheduler == "random" else "epochs")
    tuner = Tuner(trial_backend=backend, scheduler=chosen,
                  stop_criterion=StoppingCriterion(max_wallclock_time=max(task.deadlines)), n_workers=WORKERS,
                  sleep_time=0, callbacks=[SimulatorCallback()], results_update_interval=1e9,
                  print_update_interval=1e9, save_tuner=False, tuner_name=f"{task.name}-{scheduler}-{seed}")
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the Tuner's closing table, a line per trial
        tuner.run()
    seconds = time.perf_counter() - start
    results = tuner.callbacks[0].dataframe()
    rows = []
    for factor, deadline in zip(DEADLINE_FACTORS, task.deadlines):
        by = results[results[ST_TUNER_TIME] <= deadline]
        rows.append({"task": task.name, "factor": factor, "deadline": deadline, "scheduler": scheduler,
                     "seed": seed, "best": float(by["score"].max()) if len(by) else float("nan"),
                     "trials": int(by["trial_id"].nunique()), "rows": len(task.configs),
                     "seconds": round(seconds, 2)})
    return rows


def parse_schedulers(items: list[str], seeds: int) -> dict[str, tuple[int, set[str] | None]]:
    """``["random", "mobster=3", "dyhpo=3@7593,167149"]`` -> {"random": (seeds, None), "mobster": (3, None),
    "dyhpo": (3, {"lcbench-7593", "lcbench-167149"})}.

    ``NAME=N``: seeds 0..N-1 for that scheduler; ``NAME=N@TASK,TASK``: on those tasks only."""
    chosen = {}
    for item in items:
        name, _, spec = item.partition("=")
        count, at, only = spec.partition("@")
        if name not in LCBENCH_SCHEDULERS:
            raise SystemExit(f"unknown scheduler {name!r}; one of {', '.join(LCBENCH_SCHEDULERS)}")
        if at and not only:
            raise SystemExit(f"{item!r}: name the tasks after @")
        try:
            chosen[name] = (int(count) if count else seeds,
                            {f"lcbench-{t.removeprefix('lcbench-')}" for t in only.split(",")} if only else None)
        except ValueError:
            raise SystemExit(f"{item!r}: write NAME, NAME=SEEDS or NAME=SEEDS@TASK,TASK") from None
    return chosen


def render_lcbench(frame: pd.DataFrame, command: str, ceilings: dict[str, float] | None = None) -> str:
    """The page: mean best score ± standard error per task, deadline and scheduler; seeds and timings.

    ``ceilings``: each task's best recorded score (any curve, any step), shown beside its rows."""
    ceilings = ceilings or {}
    names = [s for s in LCBENCH_SCHEDULERS if s in set(frame["scheduler"])]
    seeds = frame.groupby("scheduler")["seed"].agg(lambda s: sorted(set(s)))
    runs = frame[frame["factor"] == DEADLINE_FACTORS[0]]
    lines = ["# The peers on the LCBench replays", "",
             f"Generated by `{command}` (Syne Tune 0.14.2 in its own environment; see the tool's docstring), "
             "from one row per run. Syne Tune's simulator (`UserBlackboxBackend` + `SimulatorCallback`) replays "
             "each LCBench task by the bench rule of tools/bench_rule.py, system 'plain': R = 51, r = 1, eta = 4, "
             "8 workers, no startup, no scaling, elapsed time per epoch from the trace's cumulative time column, "
             "deadlines 2M, 4M and 8M (M: the median time to a curve's last step on one worker). The searchers see "
             "each configuration's 7 real hyperparameters in LCBench's space and choose among the task's recorded "
             "configurations, each at most once (`restrict_configurations`; BOHB and DEHB through the nearest not "
             "yet started recorded configuration, see the tool's docstring). Legacy schedulers, promotion type "
             "(DEHB: synchronous Hyperband's brackets, as it is built), metric mode max. A cell: the mean over "
             "seeds of the best score Syne Tune's results hold by the "
             "deadline (simulated time ≤ T) ± its standard error.", "",
             "| scheduler | seeds | tasks | runs | seconds per run (mean, max) |", "|---|---|---|---|---|"]
    for name in names:
        mine = runs[runs["scheduler"] == name]
        few = seeds[name]
        span = f"0..{few[-1]}" if few == list(range(len(few))) else ", ".join(map(str, few))
        mine_tasks = sorted(set(mine["task"]))
        where = (f"all {len(mine_tasks)}" if len(mine_tasks) == frame["task"].nunique() else
                 ", ".join(t.removeprefix("lcbench-") for t in mine_tasks))
        lines.append(f"| {name} | {span} | {where} | {len(mine)} | "
                     f"{mine['seconds'].mean():.1f}, {mine['seconds'].max():.1f} |")
    lines += ["", "Seconds: the wall time of one replay to 8M (all three deadlines) on the 2-core development "
              "machine shared with other work. A scheduler whose tasks are named ran on those "
              "only (`NAME=N@TASK,...` in the command): MOBSTER and Hyper-Tune refit a Gaussian process on the "
              "results as they come, so a replay costs them minutes, more the more trials it starts (MOBSTER took "
              "719 s on lcbench-167152, where it started 336 trials by 8M, and neither finished one replay of "
              "lcbench-167185 in 10 minutes); they ran on 167149 and 167181, where ASHA started the fewest trials "
              "by 8M, and on 189862, where HyperSched with its best sampler was furthest behind a peer when they "
              "were chosen. DyHPO, about a minute to ten a replay, ran on every task. Each replay seeds Syne Tune's "
              "scheduler and the global random generators with its seed, so it replays the same whatever ran "
              "before it.", ""]
    header = "| task | best recorded | M (s) | × M | T (s) | " + " | ".join(names) + " |"
    lines += [header, "|" + "---|" * (5 + len(names))]
    for (task, factor), group in frame.groupby(["task", "factor"], sort=True):
        cells = []
        for name in names:
            best = group[group["scheduler"] == name]["best"]
            cells.append(f"{best.mean():.4f} ± {best.sem():.4f} ({len(best)})" if len(best) > 1 else
                         (f"{best.mean():.4f} (1)" if len(best) else "–"))
        deadline = group["deadline"].iloc[0]
        ceiling = f"{ceilings[task]:.4f}" if task in ceilings else "–"
        lines.append(f"| {task} | {ceiling} | {deadline / factor:.1f} | {factor} | {deadline:.1f} | "
                     + " | ".join(cells) + " |")
    lines += ["", "(n): the seeds in the cell. Best recorded: the task's best score on any curve at any step, "
              "what a search that found and trained the best configuration would hold.", "",
              "## When the recorded configurations run out", "",
              "Once a run has started every recorded configuration of its task, Syne Tune's Tuner ends: it asks the "
              "scheduler for nothing more, promotions included, and the workers fall idle. Per scheduler and "
              "deadline factor: mean trials started by the deadline, and in how many runs all of the task's "
              "configurations had started by then.", "",
              "| scheduler | × M | trials started (mean) | runs with all started |", "|---|---|---|---|"]
    for name in names:
        for factor in DEADLINE_FACTORS:
            group = frame[(frame["scheduler"] == name) & (frame["factor"] == factor)]
            full = int((group["trials"] >= group["rows"]).sum())
            lines.append(f"| {name} | {factor} | {group['trials'].mean():.1f} | {full} of {len(group)} |")
    return "\n".join(lines) + "\n"


CELL_COLUMNS = ("task", "factor", "scheduler", "mean", "sem", "count")
CELL_DECIMALS = 4  # a cell's mean and standard error, as the page shows them


def cells_path(page: Path) -> Path:
    """Where the cells of the LCBench page ``page`` are kept beside it (``peers-lcbench-cells.csv``)."""
    return page.with_name(f"{page.stem}-cells.csv")


def peer_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The page's cells from its runs (task, factor, scheduler, seed, best): mean best score, its standard
    error (both to CELL_DECIMALS) and the seeds, per task, deadline factor and scheduler; a frame of cells
    already is returned as is."""
    if "best" not in frame.columns:
        missing = [c for c in CELL_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"neither runs (a 'best' column) nor cells: no column {', '.join(missing)}")
        return frame[list(CELL_COLUMNS)].reset_index(drop=True)
    cells = frame.groupby(["task", "factor", "scheduler"])["best"].agg(["mean", "sem", "count"])
    cells[["mean", "sem"]] = cells[["mean", "sem"]].round(CELL_DECIMALS)
    return cells.reset_index()[list(CELL_COLUMNS)]


def lcbench_main(args) -> int:
    logging.getLogger("syne_tune").setLevel(logging.ERROR)  # "BOHB is deprecated" at every suggestion, ...
    warnings.filterwarnings("ignore", category=FutureWarning)
    chosen = parse_schedulers(args.schedulers, args.seeds)
    files = lcbench_files(args.curves)
    if args.tasks:
        files = [p for p in files if p.stem.removeprefix("lcbench-") in set(args.tasks) or p.stem in set(args.tasks)]
    if not files:
        raise SystemExit(f"no LCBench task under {args.curves / LCBENCH_DIR}")
    tasks = [lcbench_task(p) for p in files]
    done = pd.read_csv(args.raw) if args.raw is not None and args.raw.exists() else pd.DataFrame()
    have = set() if done.empty else set(zip(done["task"], done["scheduler"], done["seed"]))
    for task in tasks:
        print(f"{task.name}: R = {task.R}, M = {task.M:.1f} s, deadlines {task.deadlines}", flush=True)
    known = {t.name for t in tasks}
    for name, (_, only) in chosen.items():
        if only is not None and not only <= known:
            raise SystemExit(f"{name}: no task {', '.join(sorted(only - known))} here")
    wanted = {name: (count, known if only is None else only) for name, (count, only) in chosen.items()}
    for seed in range(max(count for count, _ in wanted.values())):  # seed by seed: a run cut short stays balanced
        for task in tasks:
            for name, (count, names) in wanted.items():
                if seed >= count or task.name not in names or (task.name, name, seed) in have:
                    continue
                rows = lcbench_run(task, name, seed)
                print(f"{task.name} {name} seed {seed}: " + ", ".join(f"{r['factor']}M {r['best']:.4f}" for r in rows)
                      + f" ({'/'.join(str(r['trials']) for r in rows)} trials, {rows[0]['seconds']:.1f} s)",
                      flush=True)
                fresh = pd.DataFrame(rows)
                done = fresh if done.empty else pd.concat([done, fresh], ignore_index=True)
                if args.raw is not None:
                    fresh.to_csv(args.raw, mode="a", header=not args.raw.exists(), index=False)
    keep = [name in wanted and seed < wanted[name][0] and task in wanted[name][1]
            for task, name, seed in zip(done["task"], done["scheduler"], done["seed"])]
    frame = done[keep]
    text = render_lcbench(frame, args.command, {t.name: float(t.scores.max()) for t in tasks})
    print(text)
    args.out.write_text(text)
    peer_cells(frame).to_csv(cells_path(args.out), index=False)
    print(f"wrote {args.out} and {cells_path(args.out)}")
    return 0


def render(frame: pd.DataFrame, seeds: int) -> str:
    lines = ["# The peers' figures, measured again", "",
             f"Generated by `tools/bench_peers.py --seeds {seeds}` (Syne Tune 0.14.2 in its own environment; see the "
             "tool's docstring). Syne Tune's simulator, 8 workers, no startup, 30 s per epoch, eta = 4; mean best "
             "score ± standard error. DESIGN.md §8 quotes seeds 0..4.", "",
             "| trace | T (s) | scheduler | seeds 0..4 | seeds 0.." + str(seeds - 1) + " |", "|---|---|---|---|---|"]
    for (trace, deadline, scheduler), group in frame.groupby(["trace", "deadline", "scheduler"], sort=True):
        few = group[group["seed"] < 5]["best"]
        lines.append(f"| {trace} | {int(deadline)} | {scheduler} | {few.mean():.4f} ± {few.sem():.4f} | "
                     f"{group['best'].mean():.4f} ± {group['best'].sem():.4f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds 0..N-1 (default 40; with --lcbench 10, for a scheduler without =N)")
    parser.add_argument("--curves", type=Path, default=CURVES)
    parser.add_argument("--out", type=Path, default=None,
                        help="the page (default docs/results/peers.md; peers-lcbench.md with --lcbench)")
    parser.add_argument("--lcbench", action="store_true", help="replay the LCBench tasks (alone)")
    parser.add_argument("--schedulers", nargs="+", default=list(LCBENCH_SCHEDULERS), metavar="NAME[=N]",
                        help=f"with --lcbench: {', '.join(LCBENCH_SCHEDULERS)}; =N: N seeds for that one")
    parser.add_argument("--tasks", nargs="+", default=None, help="with --lcbench: only these tasks (e.g. 7593)")
    parser.add_argument("--raw", type=Path, default=None,
                        help="with --lcbench: a CSV of every run's row, appended to; runs in it are not rerun")
    args = parser.parse_args(argv)
    os.environ.setdefault("SYNETUNE_FOLDER", tempfile.mkdtemp(prefix="bench-peers-"))
    logging.getLogger().setLevel(logging.WARNING)
    _without_botorch()
    if args.lcbench:
        args.seeds = 10 if args.seeds is None else args.seeds
        args.out = LCBENCH_OUT if args.out is None else args.out
        shown = ["--lcbench", "--seeds", str(args.seeds), "--schedulers", *args.schedulers]
        if args.tasks:
            shown += ["--tasks", *args.tasks]
        args.command = "tools/bench_peers.py " + " ".join(shown)
        return lcbench_main(args)
    args.seeds = 40 if args.seeds is None else args.seeds
    args.out = OUT if args.out is None else args.out
    rows = []
    for trace in TRACES:
        for deadline in DEADLINES:
            for scheduler in SCHEDULERS:
                for seed in range(args.seeds):
                    rows.append({"trace": trace, "deadline": deadline, "scheduler": scheduler, "seed": seed,
                                 "best": best_score(args.curves, trace, scheduler, deadline, seed)})
                print(f"{trace} {deadline} {scheduler}: done", flush=True)
    text = render(pd.DataFrame(rows), args.seeds)
    print(text)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
