"""tools/bench_robustness.py on the shared real curves (skipped when they are absent)."""

from __future__ import annotations

import pytest

from tests.test_sim_studies import _tool

bench = _tool("bench_robustness")
needs_curves = pytest.mark.skipif(not (bench.CURVES / "lstm-ptb.csv").exists(), reason="the shared curves are absent")


def test_grid_varies_every_axis_around_each_trace_of_the_quality_bench():
    grid = bench.cells()
    traces = {setting.trace for setting in bench.SETTINGS}
    assert {cell.trace for cell in grid} == traces
    assert len(grid) == len(traces) * 16
    lstm = [cell for cell in grid if cell.trace == "lstm-ptb.csv"]
    assert {cell.R for cell in lstm} == {60, 30} and {cell.r for cell in lstm} == {1, 3}
    assert {cell.atoms for cell in lstm} == {4, 16} and {cell.mode for cell in lstm} == {"min"}
    assert {(cell.scaling, cell.startup) for cell in lstm} == {("none", 0.0), ("linear", 30.0)}
    assert lstm[0].deadlines == [900, 2700, 7200]  # 0.5, 1.5 and 4 times 60 steps of 30 s
    assert [cell.trace for cell in bench.cells(["lstm-ptb"])] == ["lstm-ptb.csv"] * 16


def test_an_unknown_trace_name_is_refused_with_exit_2_naming_it(capsys, tmp_path):
    out = tmp_path / "robustness.md"
    with pytest.raises(SystemExit) as stop:
        bench.main(["--only", "lstm-ptb", "lstm-pbt", "--out", str(out)])
    assert stop.value.code == 2
    assert "lstm-pbt" in capsys.readouterr().err and not out.exists()


@needs_curves
def test_bench_writes_regrets_ratios_and_a_summary_per_trace(tmp_path):
    out = tmp_path / "robustness.md"
    assert bench.main(["--seeds", "1", "--jobs", "1", "--only", "lstm-ptb", "--out", str(out)]) == 0
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| lstm-ptb | ")]
    summary, cells = rows[0], rows[1:]
    assert len(cells) == 16 * 3
    assert summary.split(" | ")[1] == "48"  # cells counted in the per-trace summary
    # a cell row: the key, three regrets, the ratio, the verdict; the ratio follows from the regrets
    for row in cells:
        fields = row.strip("| ").split(" | ")
        asha, random, ours, ratio = (float(x) for x in fields[6:10])
        assert ratio == pytest.approx(max(ours, 1e-4) / max(min(asha, random), 1e-4), rel=0.02, abs=0.01)
        tolerance = 0.01 if max(asha, random, ours) >= 1 else 0.0001  # the regrets are rounded
        if fields[10] == "yes":
            assert ours <= min(asha, random) + tolerance
        else:
            assert fields[10] == "**no**" and ours >= min(asha, random) - tolerance
    assert "| all | 48 |" in text
    # picked blind (†): no scaling, half of R's steps fit (0.5 x R): 8 of the 48 cells, nothing else
    blind = [row for row in cells if " †" in row.split(" | ")[5]]
    assert len(blind) == 8 and all(row.split(" | ")[4] == "none" for row in blind)
    assert {row.split(" | ")[5] for row in blind} == {"900 †", "450 †"} and "8 of 48 cells." in text
