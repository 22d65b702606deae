"""Rungs ranked by what a trial's curve so far foretells (hpcsched.schedulers.forecast)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.loop.simulate import simulate_experiment
from hpcsched.schedulers.forecast import Forecast, feature_steps
from hpcsched.schedulers.kept import MIN_ROWS, NORMAL, normal_scores
from hpcsched.schedulers.rungs import Rung
from hpcsched.spec import parse_experiment

MARKS = (1, 4, 16)  # r = 1, eta = 4, R = 60


def curve(tau: float, top: float, steps: int) -> dict[int, float]:
    return {step: top * (1 - np.exp(-step / tau)) for step in range(1, steps + 1)}


def crossing(tau: float) -> float:
    """The plateau of a curve of time constant ``tau``: the slower it learns, the higher it ends."""
    return 0.6 + 0.04 * tau


def feed(forecast: Forecast, trial: str, points: dict[int, float]) -> None:
    for step, score in points.items():
        forecast.observe(trial, step, score)


def test_features_are_the_previous_milestone_half_way_and_the_rung():
    assert feature_steps(MARKS, 1) == (1, 2, 4) and feature_steps(MARKS, 2) == (4, 8, 16)
    assert feature_steps((1, 2), 1) == (1, 2)  # (half-way is one of them)


def test_once_enough_trials_reached_the_next_milestone_a_slow_starter_that_ends_higher_ranks_first():
    refits: list[int] = []
    forecast = Forecast(MARKS, 60, refits.append)
    rng = np.random.default_rng(0)
    fast, slow = curve(1.0, crossing(1.0), 4), curve(6.0, crossing(6.0), 4)
    assert fast[4] > slow[4]  # by the score at the rung, the fast starter stands first
    rows = MIN_ROWS + len(feature_steps(MARKS, 1)) + 1
    for i in range(rows - 1):
        tau = rng.uniform(0.5, 8.0)
        feed(forecast, f"t{i}", curve(tau, crossing(tau), 16))
    assert not forecast.ready(1) and refits == []
    assert forecast.rung_value("x", 1, 0.25) == 0.25  # (no forecast yet: the score)
    tau = rng.uniform(0.5, 8.0)
    feed(forecast, "last", curve(tau, crossing(tau), 16))
    assert forecast.ready(1) and refits == [1]
    feed(forecast, "fast", fast)
    feed(forecast, "slow", slow)
    assert forecast.value(1, "slow") > forecast.value(1, "fast")
    assert forecast.values(1, ["fast", "slow"]) == pytest.approx({"fast": forecast.value(1, "fast"),
                                                                   "slow": forecast.value(1, "slow")})
    assert not forecast.ready(0) and forecast.rung_value("slow", 0, 0.5) == 0.5  # the first rung: its score


def test_a_level_is_refitted_once_the_trials_at_its_target_have_doubled():
    refits: list[int] = []
    forecast = Forecast(MARKS, 60, refits.append)
    rows = MIN_ROWS + len(feature_steps(MARKS, 1)) + 1
    rng = np.random.default_rng(1)
    for i in range(2 * rows):
        tau = rng.uniform(0.5, 8.0)
        feed(forecast, f"t{i}", curve(tau, crossing(tau), 16))
        assert refits == ([] if i + 1 < rows else [1] if i + 1 < 2 * rows else [1, 1]), i


def test_a_trial_that_skipped_steps_takes_its_later_score_at_the_steps_it_skipped():
    forecast = Forecast(MARKS, 60, lambda level: None)
    forecast.observe("t", 3, 0.4)
    forecast.observe("t", 5, 0.6)
    assert [forecast.columns[s].recorded["t"] for s in (1, 2, 4)] == [0.4, 0.4, 0.6]
    forecast.observe("t", 4, 0.9)  # (a step already filed keeps its first score)
    assert forecast.columns[4].recorded["t"] == 0.6


def test_a_rescored_rung_ranks_cuts_and_orders_its_paused_trials_by_the_new_values():
    rung = Rung(4, 4)
    for trial, score in {"a": 0.9, "b": 0.5, "c": 0.1}.items():
        rung.record(trial, score)
    rung.add_paused("a")
    rung.add_paused("c")
    rung.rescore({"a": -1.0, "c": 2.0})
    assert rung.recorded == {"a": -1.0, "b": 0.5, "c": 2.0}
    assert rung.best() == 2.0 and rung.rank(0.5) == 1 and rung.sorted_scores == [-1.0, 0.5, 2.0]
    assert [t for t, _ in rung.paused_best_first()] == ["c", "a"]


def _crossing_trace(path, trials=200, R=32):
    rows = ["trial,step,score"]
    rng = np.random.default_rng(3)
    for i in range(trials):
        tau = rng.uniform(0.5, 8.0)
        top = crossing(tau) + rng.normal(0, 0.01)
        rows.extend(f"c{i},{step},{score:.5f}" for step, score in curve(tau, top, R).items())
    path.write_text("\n".join(rows) + "\n")


def test_hypersched_finds_the_slow_starters_that_end_higher_where_ranking_by_the_score_does_not(tmp_path):
    trace = tmp_path / "crossing.csv"
    _crossing_trace(trace)
    raw = {"name": "crossing", "metric": {"name": "score", "mode": "max"}, "deadline": 128,
           "scheduler": {"kind": "hypersched", "r": 1, "R": 32, "eta": 4, "scaling": "none"},
           "resources": {"atoms": 8},
           "workload": {"kind": "trace", "path": str(trace), "step_time": 1.0, "scaling": "none"},
           "variants": [{"name": "forecast"}, {"name": "score", "scheduler": {"rung_value": "score"}}]}
    frame = simulate_experiment(parse_experiment(raw), seeds=list(range(16)), event_log=False)
    best = frame.pivot(index="seed", columns="variant", values="best_score")
    wins, losses = (best["forecast"] > best["score"]).sum(), (best["forecast"] < best["score"]).sum()
    # (ranking by the score finds them too in a few seeds, where its rungs happen to read the reversal early)
    assert wins >= 2 * losses + 4 and best["forecast"].mean() > best["score"].mean(), best


def test_one_rung_has_nothing_to_forecast_and_a_fit_on_the_most_rows_a_fit_reads_is_the_last(monkeypatch):
    import hpcsched.schedulers.forecast as forecast_module

    alone = Forecast((1,), 60, lambda level: None)
    alone.observe("t", 1, 0.5)
    assert alone.features == {} and not alone.ready(1)
    monkeypatch.setattr(forecast_module, "MOST_ROWS", 16)
    refits: list[int] = []
    forecast = Forecast(MARKS, 60, refits.append)
    rng = np.random.default_rng(2)
    for i in range(64):
        tau = rng.uniform(0.5, 8.0)
        feed(forecast, f"t{i}", curve(tau, crossing(tau), 16))
    assert refits == [1, 1]  # at 12 rows, at 24 (which read the most, 16), and never again


def test_a_step_s_scores_rank_against_the_latest_that_a_fit_reads(monkeypatch):
    import hpcsched.schedulers.forecast as forecast_module

    monkeypatch.setattr(forecast_module, "MOST_ROWS", 3)
    column = forecast_module.RecentScores()
    for trial, score in [("a", 0.05), ("b", 0.1), ("c", 0.5), ("d", 0.3), ("a", 0.9)]:
        column.record(trial, score)
    assert column.recorded == {"a": 0.05, "b": 0.1, "c": 0.5, "d": 0.3}  # every trial's first score
    assert column.sorted_scores == [0.1, 0.3, 0.5] and len(column) == 3  # ranked against the latest three
    assert column.rank(0.9) == 0 and column.rank(0.3) == 1 and column.rank(0.05) == 3
    # "a" left the window and is below all of it: it takes the window's lowest share, as its worst ("b") does
    lowest = NORMAL.inv_cdf(0.5 / 3)
    assert normal_scores(column, ["a", "b", "d"]) == {"a": lowest, "b": lowest, "d": 0.0}
    forecast = Forecast(MARKS, 60, lambda level: None)
    forecast.columns = {step: column for step in forecast.columns}
    forecast.coef[1] = np.array([0.0, 1.0, 0.0, 0.0])
    assert forecast.value(1, "a") == pytest.approx(lowest)


def test_one_trial_s_share_is_the_share_a_column_of_counts_gives_it():
    from hpcsched.schedulers.kept import share_below

    counts = np.array([0, 1, 5, 9, 12])  # (12: below all ten, as a score that left the window)
    shares = share_below(counts, 10)
    assert [share_below(int(c), 10) for c in counts] == shares.tolist()
    assert shares.tolist() == pytest.approx([0.95, 0.85, 0.45, 0.05, 0.05])


def test_normal_quantiles_are_normaldist_s_to_the_bit():
    """Rows of normal scores are computed at once; each equals NormalDist.inv_cdf's (so a run ranks as
    it would one by one), in the central region computed in bulk and in the tails."""
    from hpcsched.schedulers.kept import normal_quantiles

    shares = np.concatenate([np.random.default_rng(3).random(20_000), (np.arange(4096) + 0.5) / 4096,
                             [0.075, 0.0750000001, 0.925, 0.9249999999, 0.5, 1e-300, 1 - 1e-16]])
    bulk = normal_quantiles(shares)
    assert bulk.tolist() == [NORMAL.inv_cdf(p) for p in shares.tolist()]
