"""Analysis loaders: frames checked against the journal they come from (simulated and hand-built runs)."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hpcsched.analysis import Run, check_usage, load_run, load_simulation, means_table, usage_curve
from hpcsched.analysis.parse import parse_journal
from hpcsched.core.errors import RunDirError
from hpcsched.rundir.journal import read_journal
from hpcsched.core.records import (ControllerResumed, EntranceClosed, Exited, Launched, Reported, RunFinished,
                                   RunStarted, Running, StopRequested, TrialCreated, to_json)
from hpcsched.loop.simulate import simulate_experiment, simulate_run
from hpcsched.spec import parse_experiment
from hpcsched.core.state import RunState

SMALL = {
    "name": "small",
    "metric": {"name": "score", "mode": "max"},
    "scheduler": {"kind": "hypersched", "r": 5, "R": 100, "eta": 4, "resize_cooldown": 1,
                  "entrance": "adaptive", "speculative": True},  # explores, resizes in 12 s
    "resources": {"atoms": 4},
    "deadline": 12,
    "space": {"lr": {"loguniform": [1.0e-4, 1.0]}, "momentum": {"grid": [0.9, 0.95]}},
    "workload": {"kind": "synthetic", "step_time": 0.1, "startup": 0.3, "scaling": "sqrt"},
    "variants": [{"name": "asha", "scheduler": {"kind": "asha"}}, {"name": "hypersched"}],
}


def simulated_journal(path: Path, variant: str = "hypersched", seed: int = 0, raw: dict | None = None) -> Path:
    """Simulate one run of the small spec and write its journal to ``path``."""
    spec = parse_experiment(raw or SMALL).spec
    chosen = next(v for v in spec.variants if v.name == variant)
    path.parent.mkdir(parents=True, exist_ok=True)
    simulate_run(spec, chosen, seed, event_log=path)
    return path


def write_records(path: Path, records: list, tail: str = "") -> Path:
    """A journal of the given records (plus ``tail`` text, e.g. a torn line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(to_json(r), separators=(",", ":")) + "\n" for r in records)
    path.write_text(text + tail, encoding="utf-8")
    return path


def hand_records() -> list:
    """A run in progress: a resized then finished trial, an errored one, a paused and resumed one
    still running at the end, and one created but never launched (4 atoms)."""
    cfg = lambda lr, opt: {"lr": lr, "opt": {"name": opt}}  # noqa: E731
    return [
        RunStarted(0.0, "hand", 100.0, 4, 7, "digest", "v1", ("0", "1", "2", "3")),
        TrialCreated(0.0, "a", 0, cfg(0.1, "sgd")),
        Launched(0.0, "a", ("0",), "start", 0),
        TrialCreated(0.0, "b", 1, cfg(0.2, "adam")),
        Launched(0.0, "b", ("1",), "start", 0),
        Running(2.0, "a", 2.0),
        Running(3.0, "b", 3.0),
        Reported(4.0, "a", 1, 0.5),
        Reported(5.0, "b", 1, 0.4),
        Reported(6.0, "a", 2, 0.7),
        Exited(7.0, "b", "errored", 1, "boom"),
        StopRequested(8.0, "a", "resize", 3, ("1", "2"), "grow 1->3"),
        Exited(9.0, "a", "checkpointed", 2),
        Launched(9.0, "a", ("0", "1", "2"), "resize", 2),
        Running(10.0, "a", 1.0),
        Reported(11.0, "a", 3, 0.9),
        Reported(12.0, "a", 4, 0.8),
        EntranceClosed(12.5, "enough explored"),
        TrialCreated(13.0, "c", 2, cfg(0.3, "sgd")),
        Launched(13.0, "c", ("3",), "start", 0),
        Running(14.0, "c", 1.0),
        Reported(15.0, "c", 1, 0.95),
        StopRequested(16.0, "c", "pause", reason="below cutoff"),
        Exited(16.0, "c", "checkpointed", 1),
        Exited(18.0, "a", "finished", 4),
        Launched(18.0, "c", ("0", "1"), "resume", 1),
        Running(19.0, "c", 1.0),
        Reported(20.0, "c", 2, 0.99),
        TrialCreated(20.0, "d", 3, cfg(0.4, "adam")),
    ]


def replay(records: list, mode: str = "max") -> RunState:
    state = RunState(mode)
    for r in records:
        state.apply(r)
    return state


@pytest.fixture(scope="module")
def sim_journal(tmp_path_factory) -> Path:
    return simulated_journal(tmp_path_factory.mktemp("sim") / "run.jsonl")


# ---------------------------------------------------------------- a simulated run


def test_frames_match_the_journal_records(sim_journal):
    records = read_journal(sim_journal)
    run = load_run(sim_journal)
    kinds = Counter(r.kind for r in records)
    assert len(run.trials) == kinds["trial_created"]
    assert len(run.scores) == kinds["reported"]
    assert len(run.allocations) == kinds["launched"]
    assert len(run.events) == len(records)
    assert Counter(run.events["kind"].astype(str)) == kinds
    reports = [r for r in records if isinstance(r, Reported)]
    assert run.scores["trial"].tolist() == [r.trial for r in reports]
    assert run.scores["step"].tolist() == [r.step for r in reports]
    assert run.scores["score"].tolist() == [r.score for r in reports]  # exact, not approximate
    assert run.scores["t"].tolist() == [r.t for r in reports]
    assert run.events["t"].tolist() == [r.t for r in records]
    launches = [r for r in records if isinstance(r, Launched)]
    assert run.allocations["trial"].tolist() == [r.trial for r in launches]
    assert run.allocations["atoms"].tolist() == [len(r.atoms) for r in launches]
    assert run.allocations["reason"].tolist() == [r.reason for r in launches]


def test_trials_agree_with_a_full_replay(sim_journal):
    records = read_journal(sim_journal)
    state = replay(records)
    run = load_run(sim_journal)
    trials = run.trials.set_index("trial")
    assert list(trials.index) == list(state.trials)
    for tid, t in state.trials.items():
        row = trials.loc[tid]
        assert row["status"] == t.status
        assert row["launches"] == t.launches and row["resizes"] == t.resizes
        assert row["steps"] == t.step
        if t.best_score is None:  # never reported (say, killed at the deadline in its startup)
            assert pd.isna(row["best_score"]) and pd.isna(row["best_step"])
        else:
            assert row["best_score"] == t.best_score and row["best_step"] == t.best_step
        assert pd.isna(row["last_score"]) if t.last_score is None else row["last_score"] == t.last_score
        assert row["run_time"] == pytest.approx(t.run_time(state.now))
        assert row["startup_total"] == pytest.approx(sum(t.startups))
        assert row["config.lr"] == t.config["lr"] and row["config.momentum"] == t.config["momentum"]
    assert int(trials["resizes"].sum()) == state.resizes
    assert int(trials["pauses"].sum()) == state.pauses
    assert int((run.allocations["end_reason"] == "resize").sum()) == state.resizes


def test_each_trials_best_is_the_max_of_its_scores(sim_journal):
    run = load_run(sim_journal)
    by_trial = run.scores.groupby("trial")["score"]
    trials = run.trials.set_index("trial")
    reported = trials[trials["reports"] > 0]
    assert (reported["best_score"] == by_trial.max().reindex(reported.index)).all()
    assert (reported["reports"] == by_trial.size().reindex(reported.index)).all()
    assert (reported["last_score"] == by_trial.last().reindex(reported.index)).all()
    assert trials.loc[trials["reports"] == 0, "best_score"].isna().all()


def test_run_info_best_is_run_finished(sim_journal):
    records = read_journal(sim_journal)
    finished = records[-1]
    assert isinstance(finished, RunFinished)
    info = load_run(sim_journal).info
    assert (info.best_trial, info.best_score, info.best_step) == \
        (finished.best_trial, finished.best_score, finished.best_step)
    assert not info.in_progress and info.finished_at == finished.t
    started = records[0]
    assert (info.name, info.variant, info.seed, info.atoms, info.deadline, info.start) == \
        (started.name, started.variant, started.seed, started.atoms, started.deadline, started.t)
    assert info.entrance_closed_at == replay(records).entrance_closed_at
    assert info.mode == "max"
    best = load_run(sim_journal).best_so_far
    assert best["score"].iloc[-1] == finished.best_score and best["score"].is_monotonic_increasing


def test_allocations_never_hold_more_than_the_run_has(sim_journal):
    run = load_run(sim_journal)
    alloc = run.allocations
    curve = check_usage(alloc, run.info.atoms)
    assert curve["atoms"].max() <= run.info.atoms and curve["atoms"].min() >= 0
    assert curve["atoms"].iloc[-1] == 0  # the run finished: everything released
    assert (alloc["end"] >= alloc["start"]).all() and (alloc["duration"] >= 0).all()
    assert set(alloc["end_reason"]) <= {"pause", "stop", "resize", "deadline", "finished", "errored"}
    # the same check, done the slow way at every interval start
    for t in alloc["start"].unique():
        held = alloc[(alloc["start"] <= t) & (alloc["end"] > t)]["atoms"].sum()
        assert held <= run.info.atoms
    with pytest.raises(ValueError, match="atoms held"):
        check_usage(alloc, 1)


def test_scores_carry_the_atoms_held_when_reported(sim_journal):
    records = read_journal(sim_journal)
    held: dict[str, int] = {}
    expected = []
    for r in records:
        if isinstance(r, Launched):
            held[r.trial] = len(r.atoms)
        elif isinstance(r, Reported):
            expected.append(held[r.trial])
    run = load_run(sim_journal)
    assert run.scores["atoms"].tolist() == expected
    assert run.scores["atoms"].max() > 1  # the fixture resizes trials


def test_usage_curve_by_group_sums_to_the_total(sim_journal):
    run = load_run(sim_journal)
    curve = usage_curve(run.allocations, run.info.start, by="end_reason")
    groups = [c for c in curve.columns if c not in ("t", "elapsed", "atoms")]
    assert (curve[groups].sum(axis=1) == curve["atoms"]).all()


# ---------------------------------------------------------------- a hand-built run


def test_hand_built_run_in_progress(tmp_path):
    write_records(tmp_path / "run" / "events.jsonl", hand_records())
    run = load_run(tmp_path / "run")
    info = run.info
    assert info.in_progress and info.run_dir == tmp_path / "run" and info.last_t == 20.0
    assert (info.best_trial, info.best_score, info.best_step) == ("c", 0.99, 2)
    assert info.entrance_closed_at == 12.5 and info.entrance_reason == "enough explored"

    a = run.allocations
    assert a[["trial", "atoms", "start", "end", "reason", "end_reason"]].values.tolist() == [
        ["a", 1, 0.0, 9.0, "start", "resize"],
        ["b", 1, 0.0, 7.0, "start", "errored"],
        ["a", 3, 9.0, 18.0, "resize", "finished"],
        ["c", 1, 13.0, 16.0, "start", "pause"],
        ["c", 2, 18.0, 20.0, "resume", "open"],
    ]
    assert a["startup"].tolist() == [2.0, 3.0, 1.0, 1.0, 1.0]
    assert a["end_step"].tolist()[:4] == [2, 1, 4, 1] and pd.isna(a["end_step"].iloc[4])
    assert a["stop_reason"].iloc[0] == "grow 1->3" and a["stop_reason"].iloc[3] == "below cutoff"

    t = run.trials.set_index("trial")
    assert t["status"].to_dict() == {"a": "completed", "b": "errored", "c": "running", "d": "created"}
    assert t["atoms"].to_dict() == {"a": 3, "b": 1, "c": 2, "d": 0}
    assert t["max_atoms"].to_dict() == {"a": 3, "b": 1, "c": 2, "d": 0}
    assert t["launches"].to_dict() == {"a": 2, "b": 1, "c": 2, "d": 0}
    assert t["resizes"].to_dict() == {"a": 1, "b": 0, "c": 0, "d": 0}
    assert t["pauses"].to_dict() == {"a": 0, "b": 0, "c": 1, "d": 0}
    assert t["best_score"].loc[["a", "b", "c"]].tolist() == [0.9, 0.4, 0.99] and math.isnan(t.loc["d", "best_score"])
    assert t["best_step"].loc[["a", "b", "c"]].tolist() == [3, 1, 2] and pd.isna(t.loc["d", "best_step"])
    assert t["last_score"].loc[["a", "c"]].tolist() == [0.8, 0.99]
    assert t["steps"].to_dict() == {"a": 4, "b": 1, "c": 2, "d": 0}
    assert t["run_time"].to_dict() == pytest.approx({"a": 15.0, "b": 4.0, "c": 3.0, "d": 0.0})
    assert t["startup_total"].to_dict() == pytest.approx({"a": 3.0, "b": 3.0, "c": 2.0, "d": 0.0})
    assert t.loc["a", "ended_at"] == 18.0 and t.loc["b", "ended_at"] == 7.0
    assert math.isnan(t.loc["c", "ended_at"]) and math.isnan(t.loc["d", "ended_at"])
    assert t.loc["b", "error"] == "boom" and t.loc["a", "error"] == ""
    assert t["config.opt.name"].tolist() == ["sgd", "adam", "sgd", "adam"]
    assert math.isnan(t.loc["d", "first_start"]) and t.loc["c", "first_start"] == 13.0

    s = run.scores
    assert s["atoms"].tolist() == [1, 1, 1, 3, 3, 1, 2]
    curve = check_usage(a, 4)
    assert curve[["t", "atoms"]].values.tolist() == [[0.0, 2], [7.0, 1], [9.0, 3], [13.0, 4], [16.0, 3],
                                                     [18.0, 2]]
    assert run.usage["t"].iloc[-1] == 20.0 and run.usage["atoms"].iloc[-1] == 2

    e = run.events
    launched = e[e["kind"] == "launched"]
    assert launched["atoms"].tolist() == [1, 1, 3, 1, 2]
    assert launched["atom_ids"].iloc[2] == ("0", "1", "2")
    stop = e[e["kind"] == "stop_requested"].iloc[0]
    assert stop["atoms"] == 3 and stop["extra"] == ("1", "2") and stop["intent"] == "resize"
    assert e.loc[e["kind"] == "run_started", "atoms"].iloc[0] == 4
    assert e["seq"].tolist() == list(range(len(hand_records())))
    assert (e["elapsed"] == e["t"]).all()


def test_min_mode_comes_from_the_journal_or_the_caller(tmp_path):
    started = RunStarted(0.0, "hand", 100.0, 4, 7, "digest", "v1", ("0", "1", "2", "3"), "loss", "min")
    records = [started] + hand_records()[1:] + [Exited(21.0, "c", "checkpointed", 2),
                                                 RunFinished(21.0, "deadline", "b", 0.4, 1)]
    write_records(tmp_path / "run" / "events.jsonl", records)
    run = load_run(tmp_path / "run")
    assert run.info.mode == "min" and run.info.metric == "loss" and not run.info.in_progress
    t = run.trials.set_index("trial")
    assert t["best_score"].loc[["a", "b", "c"]].tolist() == [0.5, 0.4, 0.95]
    assert t["best_step"].loc[["a", "b", "c"]].tolist() == [1, 1, 1]
    assert run.best_so_far["score"].tolist() == [0.5, 0.4]
    write_records(tmp_path / "run2" / "events.jsonl", [started] + hand_records()[1:])  # in progress
    run2 = load_run(tmp_path / "run2")
    assert (run2.info.best_trial, run2.info.best_score) == ("b", 0.4)
    assert load_run(tmp_path / "run2", mode="max").info.best_score == 0.99


def test_a_run_taken_over_by_a_restarted_controller(tmp_path):
    records = [
        RunStarted(0.0, "resumed", 50.0, 2, 0, "d", "v", ("0", "1")),
        TrialCreated(0.0, "a", 0, {}), Launched(0.0, "a", ("0",), "start"), Running(1.0, "a", 1.0),
        Reported(2.0, "a", 1, 0.3),
        RunFinished(3.0, "interrupted", "a", 0.3, 1),  # the first controller was stopped ...
        StopRequested(10.0, "a", "recover", 1, reason="controller restarted"),  # ... its trial recovered
        Reported(10.0, "a", 2, 0.4), Exited(10.0, "a", "checkpointed", 2),
        ControllerResumed(10.0, ("n2:0", "n2:1"), "n2", 99),
        Launched(10.0, "a", ("n2:0",), "recover", 2), Running(11.0, "a", 1.0), Reported(12.0, "a", 3, 0.5),
    ]
    run = load_run(write_records(tmp_path / "events.jsonl", records))
    assert run.info.in_progress and run.info.resumed_at == (10.0,) and run.info.best_score == 0.5
    assert run.allocations["reason"].tolist() == ["start", "recover"]
    assert run.allocations["end_reason"].tolist() == ["recover", "open"]
    assert run.trials["status"].tolist() == ["running"] and run.trials["launches"].tolist() == [2]
    resumed = run.events[run.events["kind"] == "controller_resumed"].iloc[0]
    assert resumed["host"] == "n2" and resumed["pid"] == 99 and resumed["atom_ids"] == ("n2:0", "n2:1")


# ---------------------------------------------------------------- partial and bad input


def test_a_run_in_progress_with_a_torn_last_line(sim_journal, tmp_path):
    lines = sim_journal.read_text().splitlines(keepends=True)
    cut = len(lines) // 2
    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir()
    path.write_text("".join(lines[:cut]) + lines[cut][: len(lines[cut]) // 2])
    run = load_run(path.parent)
    assert run.info.in_progress and run.info.torn_tail and run.info.records == cut
    records = read_journal(path)
    assert len(records) == cut
    state = replay(records)
    assert run.trials["status"].tolist() == [t.status for t in state.trials.values()]
    assert (run.info.best_trial, run.info.best_score, run.info.best_step) == \
        (state.best_trial, state.best_score, state.best_step)
    alloc = run.allocations
    live = {tid for tid, t in state.trials.items() if t.status in ("launching", "running", "stopping")}
    assert set(alloc.loc[alloc["end_reason"] == "open", "trial"]) == live
    assert (alloc.loc[alloc["end_reason"] == "open", "end"] == run.info.last_t).all()
    check_usage(alloc, run.info.atoms)
    assert len(run.events) == cut


def test_a_corrupted_middle_line_is_an_error_naming_it(sim_journal, tmp_path):
    lines = sim_journal.read_text().splitlines(keepends=True)
    lines[40] = lines[40][:20] + "\n"
    path = write_records(tmp_path / "bad.jsonl", [])
    path.write_text("".join(lines))
    with pytest.raises(RunDirError, match=r"line 41 is corrupted"):
        load_run(path)


def test_not_a_run_is_a_clear_error(tmp_path):
    with pytest.raises(RunDirError, match=f"{tmp_path}: not a run directory"):
        load_run(tmp_path)
    with pytest.raises(RunDirError, match="no such run directory"):
        load_run(tmp_path / "missing")
    (tmp_path / "summary.csv").write_text("variant,seed\n")
    with pytest.raises(RunDirError, match="load_simulation"):
        load_run(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "events.jsonl").write_text("")
    with pytest.raises(RunDirError, match="run_started"):
        load_run(empty)
    with pytest.raises(RunDirError, match="summary.csv"):
        load_simulation(empty)


def test_fast_and_slow_report_parsing_agree(tmp_path):
    records = hand_records()
    fast = parse_journal(write_records(tmp_path / "fast.jsonl", records))
    # the same reports with their keys in another order, and one with a checkpoint: the slow path
    text = (tmp_path / "fast.jsonl").read_text().splitlines()
    moved = []
    for line in text:
        data = json.loads(line)
        if data["kind"] == "reported":
            data = {"kind": "reported", "score": data["score"], "step": data["step"], "trial": data["trial"],
                    "t": data["t"]}
        moved.append(json.dumps(data))
    (tmp_path / "slow.jsonl").write_text("\n".join(moved) + "\n")
    slow = parse_journal(tmp_path / "slow.jsonl")
    pd.testing.assert_frame_equal(fast.reports, slow.reports)
    assert fast.records == slow.records


def test_reports_with_checkpoints(tmp_path):
    records = hand_records()
    records[7] = Reported(4.0, "a", 1, 0.5, "ckpt-1.pt")
    run = load_run(write_records(tmp_path / "ck.jsonl", records))
    assert run.scores["checkpoint"].tolist() == ["ckpt-1.pt", "", "", "", "", "", ""]
    assert run.events.loc[run.events["kind"] == "reported", "checkpoint"].iloc[0] == "ckpt-1.pt"


def test_loading_needs_no_matplotlib(sim_journal):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from hpcsched.analysis import load_run\n"
            f"run = load_run({str(sim_journal)!r})\n"
            "run.trials, run.scores, run.allocations, run.events, run.usage\n"
            "import hpcsched.analysis.plots, hpcsched.analysis.report\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# ---------------------------------------------------------------- simulator output


def test_load_simulation_matches_its_summary(tmp_path):
    raw = dict(SMALL, deadline=6, matrix={"resources.atoms": [2, 4]})
    experiment = parse_experiment(raw)
    simulate_experiment(experiment, [0, 1], tmp_path / "out")
    sim = load_simulation(tmp_path / "out")
    assert sim.matrix_keys == ("resources.atoms",)
    assert len(sim.summary) == 8 and len(sim.runs) == 8
    assert set(sim.summary["cell"]) == {"atoms=2", "atoms=4"} == set(sim.runs["cell"])
    assert sim.variants == ["asha", "hypersched"]
    for row in sim.summary.to_dict("records"):
        run = sim.run(row["cell"], row["variant"], row["seed"])
        assert len(run.trials) == row["trials_started"]
        assert run.info.best_score == pytest.approx(row["best_score"], rel=1e-12)
        assert run.info.best_trial == row["best_trial"]
        assert int(run.trials["resizes"].sum()) == row["resizes"]
        assert int(run.trials["pauses"].sum()) == row["pauses"]
        assert run.info.atoms == row["resources.atoms"]
    trials = sim.frame("trials", variants=["asha"])
    assert list(trials.columns[:3]) == ["cell", "variant", "seed"] and set(trials["variant"]) == {"asha"}
    assert len(trials) == int(sim.summary.loc[sim.summary["variant"] == "asha", "trials_started"].sum())
    events = sim.frame("events", cells=["atoms=2"], seeds=[1])
    assert set(events["run_variant"].dropna()) == {"asha", "hypersched"}
    means = sim.means()
    assert len(means) == 4 and (means["seeds"] == 2).all()
    expected = sim.summary.groupby(["resources.atoms", "variant"])["best_score"].agg(["mean", "std"])
    got = means.set_index(["resources.atoms", "variant"])
    assert np.allclose(got.loc[expected.index, "best_score_mean"], expected["mean"])
    assert np.allclose(got.loc[expected.index, "best_score_sd"], expected["std"])
    assert means_table(sim.summary.iloc[:0], sim.matrix_keys).empty
    # a cell as the spec names it, or as its directory is named; a miss names what there is
    assert sim.run("resources.atoms=4", "asha", 1).info.atoms == 4 == sim.run("atoms=4", "asha", 1).info.atoms
    with pytest.raises(RunDirError, match="'atoms=3' is not a cell of .*; cells: atoms=2, atoms=4") as info:
        sim.run("atoms=3")
    assert "--no-events" not in str(info.value)
    with pytest.raises(RunDirError, match="variants: asha, hypersched; seeds: 0, 1"):
        sim.run("atoms=2", "nope")
    simulate_experiment(experiment, [0], tmp_path / "quiet", event_log=False)
    with pytest.raises(RunDirError, match="ran with --no-events"):
        load_simulation(tmp_path / "quiet").run("atoms=2")


def test_run_objects_cache_their_frames(sim_journal):
    run = Run(sim_journal)
    assert run.trials is run.trials and run.scores is run.scores
    assert repr(run).startswith("Run(")


def test_metrics_reported_beside_the_score_are_journaled_and_become_columns(tmp_path):
    records = hand_records()
    i = next(k for k, r in enumerate(records) if isinstance(r, Reported))
    first = records[i]
    records[i] = Reported(first.t, first.trial, first.step, first.score, "", {"loss": 0.7, "step": 99})
    assert "metrics" not in to_json(first) and to_json(records[i])["metrics"] == {"loss": 0.7, "step": 99}
    run = load_run(write_records(tmp_path / "m.jsonl", records))
    scores = run.scores
    assert scores["loss"].iloc[0] == 0.7 and scores["loss"].iloc[1:].isna().all()
    assert scores["metric.step"].iloc[0] == 99 and scores["step"].iloc[0] == first.step  # no clash
    plain = load_run(write_records(tmp_path / "plain.jsonl", hand_records())).scores
    assert "loss" not in plain.columns and "metrics" not in plain.columns


def test_trial_times_relative_to_the_start(tmp_path):
    """A real run's clock is epoch seconds: every time in the trials frame also comes since the start."""
    shift = 1.8e9
    shifted = [dataclasses.replace(r, t=r.t + shift, **({"deadline": r.deadline + shift}
                                                        if isinstance(r, RunStarted) else {}))
               for r in hand_records()]
    write_records(tmp_path / "run" / "events.jsonl", shifted)
    t = load_run(tmp_path / "run").trials.set_index("trial")
    assert t["created_elapsed"].to_dict() == {"a": 0.0, "b": 0.0, "c": 13.0, "d": 20.0}
    assert t.loc["c", "first_start_elapsed"] == 13.0 and math.isnan(t.loc["d", "first_start_elapsed"])
    assert t.loc["a", "ended_elapsed"] == 18.0 and math.isnan(t.loc["c", "ended_elapsed"])
    assert (t["created_elapsed"] == t["created_at"] - shift).all()
