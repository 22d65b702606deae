"""tools/bench_keep.py: idealised successive halving at fixed keep fractions, on hand-built traces."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_sim_studies import _tool

bench = _tool("bench_keep")
rule_of = _tool("bench_rule").derive

TRIALS, STEPS = 64, 20  # R = 20: rungs at steps 1, 4 and 16


def write_trace(path, score) -> None:
    """``score(trial, step)`` for 64 trials of 20 steps, as a trace CSV (no time column: 30 s a step)."""
    rows = ["trial,step,score"] + [f"c{t},{s},{score(t, s)}" for t in range(TRIALS) for s in range(1, STEPS + 1)]
    path.write_text("\n".join(rows) + "\n")


def agreeing(trial: int, step: int) -> float:
    """Every step ranks the trials as the end does."""
    return trial / TRIALS + step / 1000


def late_blooming(trial: int, step: int) -> float:
    """Steps up to 16 rank the trials backwards; from step 17 on, as the end does."""
    return (-1 if step <= 16 else 1) * trial / TRIALS


def cells(tmp_path, name, score):
    path = tmp_path / f"{name}.csv"
    write_trace(path, score)
    frame = bench.trace_cells(rule_of(path, tmp_path), draws=50, seed=0)
    return frame.set_index(["factor", "keep"])["regret"]


def test_the_cost_of_a_configuration_sums_each_rung_stretch_over_the_share_that_reaches_it():
    # rungs at 10 %, 20 % and 40 % of a full training, each keeping half:
    # 0.1 + 0.5 * 0.1 + 0.25 * 0.2 + 0.125 * 0.6
    assert bench.cost((0.1, 0.2, 0.4), 0.5) == pytest.approx(0.275)
    assert bench.cost((0.1, 0.2, 0.4), 1.0) == pytest.approx(1.0)


def test_a_trace_whose_rungs_rank_the_end_is_best_cut_hard(tmp_path):
    regret = cells(tmp_path, "agree", agreeing)
    for factor in (2, 4, 8):
        assert regret[(factor, 0.25)] == 0.0  # the whole pool fits and the best goes through every rung
    assert regret[(2, 1.0)] > 0.0  # random search trains 16 of the 64


def test_a_trace_whose_rungs_rank_backwards_is_best_not_cut(tmp_path):
    regret = cells(tmp_path, "late", late_blooming)
    for factor in (2, 4, 8):
        assert regret[(factor, 1.0)] < regret[(factor, 0.25)]
        assert regret[(factor, 0.25)] > 0.5  # a quarter kept by backward ranks keeps the worst


def test_x_over_best_is_one_for_the_share_that_is_always_best_and_floors_ties(tmp_path):
    write_trace(tmp_path / "agree.csv", agreeing)
    frame = bench.trace_cells(rule_of(tmp_path / "agree.csv", tmp_path), 10, 0)
    ratios = bench.x_over_best(frame)
    assert ratios[0.25] == pytest.approx(1.0)
    assert ratios[1.0] > 1.0 and np.isfinite(ratios[1.0])


def test_the_page_lists_every_share_and_every_cell(tmp_path):
    curves = tmp_path / "curves"
    curves.mkdir()
    write_trace(curves / "agree.csv", agreeing)
    write_trace(curves / "late.csv", late_blooming)
    out = tmp_path / "keep.md"
    assert bench.main(["--draws", "5", "--curves", str(curves), "--out", str(out)]) == 0
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith(("| agree |", "| late |")) and "trainings)" in line]
    assert len(rows) == 6 and all(len(row.strip("| ").split(" | ")) == 3 + len(bench.KEEPS) for row in rows)
    assert "Cells in which each share is the best: 1/4 3," in text
    assert "| agree | 1/4 / 1/4 / 1/4 | 1→4 1.00, 4→16 1.00, 16→end 1.00, 1→end 1.00 |" in text
    assert "| late | 1 / 1 / 1 | 1→4 1.00, 4→16 1.00, 16→end -1.00, 1→end -1.00 |" in text


def test_no_draw_is_refused_with_exit_2_and_a_missing_folder_is_a_note(tmp_path, capsys):
    with pytest.raises(SystemExit) as raised:
        bench.main(["--draws", "0", "--out", str(tmp_path / "keep.md")])
    assert raised.value.code == 2 and "--draws must be at least 1, got 0" in capsys.readouterr().err
    assert bench.main(["--curves", str(tmp_path / "absent"), "--out", str(tmp_path / "keep.md")]) == 0
    assert "no curves folder" in capsys.readouterr().out and not (tmp_path / "keep.md").exists()
