"""tools/bench_peers.py's LCBench part: the bench rule's settings, the CLI, the page; replays need syne-tune.

Syne Tune is not a dependency of hpcsched: the replays are skipped where it is absent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.test_sim_studies import _tool


bench = _tool("bench_peers")
LCBENCH = bench.CURVES / bench.LCBENCH_DIR
needs_lcbench = pytest.mark.skipif(not LCBENCH.is_dir() or not bench.lcbench_files(bench.CURVES),
                                   reason="the shared LCBench curves are absent")


def _write_task(folder: Path, curves: int = 12, R: int = 5, seed: int = 0, short: bool = False) -> Path:
    """A small LCBench-like task: curves with cumulative times, and each curve's hyperparameters."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    rows, configs = [], []
    for i in range(curves):
        ceiling, per_step = rng.uniform(0.5, 0.95), rng.uniform(5.0, 20.0)
        last = R - 1 if short and i == 0 else R
        for step in range(1, last + 1):
            rows.append({"trial": f"c{i}", "step": step, "score": ceiling * (1 - 0.5 ** step),
                         "time": per_step * step})
        configs.append({"trial": f"c{i}", "batch_size": int(rng.integers(16, 513)),
                        "learning_rate": float(10 ** rng.uniform(-4, -1)), "max_dropout": float(rng.uniform()),
                        "max_units": int(rng.integers(64, 1025)), "momentum": float(rng.uniform(0.1, 0.99)),
                        "num_layers": int(rng.integers(1, 6)), "weight_decay": float(rng.uniform(1e-5, 0.1))})
    path = folder / "lcbench-9.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    pd.DataFrame(configs).to_csv(folder / "lcbench-9-configs.csv", index=False)
    return path


def test_task_reads_curves_configs_and_the_rule(tmp_path):
    task = bench.lcbench_task(_write_task(tmp_path / "lcbench"))
    assert task.name == "lcbench-9" and task.R == 5 and task.scores.shape == task.times.shape == (12, 5)
    assert task.M == pytest.approx(float(np.median(task.times[:, -1])))
    assert task.deadlines == tuple(round(k * task.M, 3) for k in (2, 4, 8))
    assert set(task.configs[0]) == set(bench.LCBENCH_SPACE)
    assert isinstance(task.configs[0]["num_layers"], int) and isinstance(task.configs[0]["momentum"], float)


def test_a_curve_short_of_R_cannot_be_a_row(tmp_path):
    with pytest.raises(ValueError, match="steps 1..5"):
        bench.lcbench_task(_write_task(tmp_path / "lcbench", short=True))


def test_schedulers_and_their_seeds_and_tasks_parse():
    assert bench.parse_schedulers(["random", "mobster=3", "dyhpo=2@7593,lcbench-9"], 10) == \
        {"random": (10, None), "mobster": (3, None), "dyhpo": (2, {"lcbench-7593", "lcbench-9"})}
    with pytest.raises(SystemExit, match="unknown scheduler"):
        bench.parse_schedulers(["smac"], 10)
    with pytest.raises(SystemExit, match="NAME=SEEDS"):
        bench.parse_schedulers(["asha=x"], 10)
    with pytest.raises(SystemExit, match="after @"):
        bench.parse_schedulers(["asha=2@"], 10)


def test_page_has_a_cell_per_task_deadline_and_scheduler():
    rows = [{"task": "lcbench-9", "factor": f, "deadline": 10.0 * f, "scheduler": s, "seed": seed,
             "best": 0.5 + 0.01 * seed + 0.001 * f, "trials": 12 if f == 8 else 5, "rows": 12, "seconds": 0.5}
            for f in (2, 4, 8) for s in ("random", "mobster") for seed in range(3 if s == "random" else 1)]
    text = bench.render_lcbench(pd.DataFrame(rows), "tools/bench_peers.py --lcbench")
    assert "`tools/bench_peers.py --lcbench`" in text
    assert "| lcbench-9 | – | 10.0 | 2 | 20.0 | 0.5120 ± 0.0058 (3) | 0.5020 (1) |" in text
    assert "| random | 0..2 | all 1 | 3 | 0.5, 0.5 |" in text
    assert "| lcbench-9 | 0.9900 | 10.0 | 8 |" in bench.render_lcbench(pd.DataFrame(rows), "x", {"lcbench-9": 0.99})
    two = pd.DataFrame(rows + [dict(r, task="lcbench-8") for r in rows if r["scheduler"] == "random"])
    assert "| mobster | 0..0 | 9 | 1 |" in bench.render_lcbench(two, "x")
    assert "| random | 8 | 12.0 | 3 of 3 |" in text and "| mobster | 2 | 5.0 | 0 of 1 |" in text


def test_the_pages_cells_are_kept_beside_it_and_read_back_as_they_are(tmp_path):
    rows = pd.DataFrame([{"task": "lcbench-9", "factor": f, "scheduler": s, "seed": seed, "best": 0.5 + 0.01 * seed}
                         for f in (2, 8) for s in ("random", "bohb") for seed in range(3 if s == "random" else 1)])
    cells = bench.peer_cells(rows)
    assert list(cells.columns) == list(bench.CELL_COLUMNS) and len(cells) == 4
    random_2 = cells[(cells["scheduler"] == "random") & (cells["factor"] == 2)].iloc[0]
    assert (random_2["mean"], random_2["sem"], random_2["count"]) == (pytest.approx(0.51), 0.0058, 3)  # 4 decimals
    assert cells[cells["scheduler"] == "bohb"]["sem"].isna().all()  # one seed: no standard error
    cells.to_csv(tmp_path / "cells.csv", index=False)
    pd.testing.assert_frame_equal(bench.peer_cells(pd.read_csv(tmp_path / "cells.csv")), cells)
    with pytest.raises(ValueError, match="no column sem, count"):
        bench.peer_cells(cells.drop(columns=["sem", "count"]))
    assert bench.cells_path(Path("docs/results/peers-lcbench.md")) == Path("docs/results/peers-lcbench-cells.csv")


@needs_lcbench
def test_the_lcbench_settings_are_the_bench_rules():
    rule = pytest.importorskip("hpcsched") and _tool("bench_rule")
    for path in bench.lcbench_files(bench.CURVES):
        task, derived = bench.lcbench_task(path), rule.derive(path, bench.CURVES)
        assert (task.R, task.deadlines, derived.mode) == (derived.R, derived.deadlines, "max")
        assert task.M == pytest.approx(derived.M) and derived.step_time is None  # the trace's own time column


@pytest.mark.parametrize("scheduler", ["random", "asha", "bohb", "dehb"])
def test_a_replay_runs_recorded_configurations_only(tmp_path, scheduler, monkeypatch):
    pytest.importorskip("syne_tune")
    monkeypatch.setenv("SYNETUNE_FOLDER", str(tmp_path / "st"))
    bench._without_botorch()
    task = bench.lcbench_task(_write_task(tmp_path / "lcbench", curves=24))
    rows = bench.lcbench_run(task, scheduler, seed=1)
    assert [r["factor"] for r in rows] == [2, 4, 8] and rows[0]["trials"] <= rows[1]["trials"] <= rows[2]["trials"]
    assert rows[2]["trials"] <= len(task.configs)  # each recorded configuration at most once
    best = [r["best"] for r in rows]
    assert best == sorted(best) and best[-1] <= task.scores.max() + 1e-12
    assert set(best) <= set(task.scores.ravel())  # every score is a recorded one (a lookup off the table raises)
    again = bench.lcbench_run(task, scheduler, seed=1)  # a seed replays the same
    assert [(r["best"], r["trials"]) for r in again] == [(r["best"], r["trials"]) for r in rows]
