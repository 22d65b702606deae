"""tools/bench_trace_settings.py on the shared real curves (skipped when they are absent)."""

from __future__ import annotations

import pytest

from tests.test_sim_studies import _tool

bench = _tool("bench_trace_settings")
needs_curves = pytest.mark.skipif(not (bench.CURVES / "cifar10-resnets.csv").exists(),
                                  reason="the shared curves are absent")


@needs_curves
def test_bench_writes_every_variant_with_regrets_and_ratios(tmp_path):
    out = tmp_path / "quality.md"
    assert bench.main(["--seeds", "2", "--jobs", "1", "--only", "lstm-ptb", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| lstm-ptb | 900 |" in text and "| lstm-ptb | 3600 |" in text
    for column in ("ASHA", "random", "one-epoch", "HyperSched", "regret HyperSched", "ratio", "over ASHA",
                   "over random"):
        assert column in text
    assert "| lstm-ptb | 900 | " in text.split("paired by seed")[1]  # the paired gains, per cell
    # 900 and 1800 s are picked blind (no trial that reaches the furthest step can be chosen on evidence)
    assert "| lstm-ptb | 900 † |" in text and "| lstm-ptb | 1800 † |" in text
    assert "| lstm-ptb | 3600 † |" not in text and "2 of 3 cells." in text
    # what the rungs know: where each rung's top quarter ends by R (epoch 2 of lstm-ptb: no better than chance)
    (row,) = [line for line in text.splitlines() if line.startswith("| lstm-ptb.csv | 2 |")]
    assert 0.4 < float(row.strip("| ").split(" | ")[-1]) < 0.6
