"""How well early scores ranked the end (hpcsched.analysis.rank_agreement), and its section of the run report."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from hpcsched.analysis.rank_agreement import early_ranking, early_steps


def reports(curves: dict[str, dict[int, float]]) -> pd.DataFrame:
    return pd.DataFrame([(trial, step, score) for trial, steps in curves.items() for step, score in steps.items()],
                        columns=["trial", "step", "score"])


def test_early_steps_double_up_to_below_R():
    assert early_steps(30) == [1, 2, 4, 8, 16] and early_steps(2) == [1] and early_steps(1) == []


def test_a_reversed_first_step_and_an_agreeing_second_step():
    # five trials trained to R = 4: step 1 ranks them exactly backwards, step 2 exactly as at R;
    # a sixth stopped at step 2 counts among those scored there but not in the pairs
    finals = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5}
    curves = {t: {1: 1.0 - f, 2: f - 0.2, 4: f} for t, f in finals.items()}
    curves["f"] = {1: 0.0, 2: 0.0}
    table = early_ranking(reports(curves), R=4, mode="max").set_index("step")
    assert list(table.index) == [1, 2]
    assert table.loc[1, "rank_corr"] == pytest.approx(-1.0) and table.loc[2, "rank_corr"] == pytest.approx(1.0)
    assert table.loc[1, "paired"] == 5 and table.loc[2, "scored"] == 6
    # the best by R ("a") stood last of the five trained at step 1 (the sixth is below it), first at step 2
    assert table.loc[1, "best_rank"] == 5 and table.loc[2, "best_rank"] == 1


def test_lower_is_better_and_a_trial_reporting_a_step_twice_counts_its_last_report():
    finals = {"a": 10.0, "b": 20.0, "c": 30.0}  # perplexity: "a" is the best
    curves = {t: {1: f, 2: f, 4: f} for t, f in finals.items()}
    frame = reports(curves)
    again = pd.DataFrame([("a", 1, 99.0)], columns=["trial", "step", "score"])  # a resumed trial's repeat
    table = early_ranking(pd.concat([frame, again], ignore_index=True), R=4, mode="min").set_index("step")
    assert table.loc[2, "rank_corr"] == pytest.approx(1.0) and table.loc[2, "best_rank"] == 1
    assert table.loc[1, "best_rank"] == 3  # worst at step 1 by its last report there


def test_nothing_to_say_with_fewer_than_three_trials_at_R_or_pairs_at_a_step():
    two = reports({"a": {1: 0.1, 4: 0.9}, "b": {1: 0.2, 4: 0.8}, "c": {1: 0.3, 2: 0.3}})
    assert early_ranking(two, R=4, mode="max").empty
    three = reports({"a": {1: 0.1, 2: 0.5, 4: 0.9}, "b": {1: 0.2, 4: 0.8}, "c": {1: 0.3, 4: 0.7}})
    table = early_ranking(three, R=4, mode="max").set_index("step")
    assert math.isnan(table.loc[2, "rank_corr"]) and table.loc[2, "paired"] == 1


def test_the_run_report_shows_the_table_for_a_random_search_run(tmp_path):
    pytest.importorskip("matplotlib")
    from hpcsched.analysis.report import build_report
    from tests.test_analysis import SMALL, simulated_journal

    raw = {**SMALL, "scheduler": {**SMALL["scheduler"], "R": 16}, "deadline": 20,
           "variants": [{"name": "random", "scheduler": {"kind": "random"}}]}
    simulated_journal(tmp_path / "events.jsonl", variant="random", raw=raw)
    (tmp_path / "spec.yaml").write_text("name: small\nmetric: {name: score, mode: max}\n")
    (tmp_path / "result.json").write_text(json.dumps({"max_steps": 16}))
    build_report(tmp_path)
    text = (tmp_path / "report" / "summary.md").read_text()
    section = text.split("## How early scores ranked the end", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| step")]
    assert [row.split(" | ")[0] for row in rows] == ["| 1", "| 2", "| 4", "| 8"]
    assert all(" of " in row for row in rows)  # where the best by R stood at each step
