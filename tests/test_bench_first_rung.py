"""tools/bench_first_rung.py on the shared real curves (skipped when they are absent)."""

from __future__ import annotations

import pytest

from hpcsched.rundir.journal import read_journal
from hpcsched.core.records import StopIntent, StopRequested
from hpcsched.loop.simulate import simulate_run
from hpcsched.spec import parse_experiment
from tests.test_sim_studies import _tool

bench = _tool("bench_first_rung")
CURVES = _tool("bench_trace_settings").CURVES
needs_curves = pytest.mark.skipif(not (CURVES / "lstm-ptb.csv").exists(), reason="the shared curves are absent")


@needs_curves
def test_bench_writes_both_first_rungs_per_cell_with_ratios(tmp_path):
    out = tmp_path / "first_rung.md"
    assert bench.main(["--seeds", "2", "--jobs", "1", "--only", "lstm-ptb", "--out", str(out)]) == 0
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| lstm-ptb | 2, 8 |")]
    assert [row.split(" | ")[2] for row in rows] == ["900 †", "1800 †", "3600"]
    for row in rows:
        cells = row.strip("| ").split(" | ")
        assert len(cells) == 11 and all(float(c) > 0 for c in cells[3:])
    assert "Mean ratio at r " in text and "picked blind" in text


@needs_curves
def test_the_later_first_rung_compares_trials_first_at_r_times_eta(tmp_path):
    setting = next(s for s in bench.SETTINGS if s.name == "lstm-ptb")
    raw = bench.experiment(setting, CURVES)
    raw.pop("matrix")
    raw["deadline"] = 3600
    spec = parse_experiment(raw).cells[0].spec
    rungs = {}
    for name in ("asha r", "asha r·eta"):
        journal = tmp_path / f"{name}.jsonl"
        simulate_run(spec, spec.variant(name), seed=0, event_log=journal)
        rungs[name] = {r.reason for r in read_journal(journal)
                       if isinstance(r, StopRequested) and r.intent == StopIntent.PAUSE}
    assert rungs["asha r"] == {"rung 2", "rung 8", "rung 32"}  # ASHA pauses at its rungs from r ...
    assert rungs["asha r·eta"] == {"rung 8", "rung 32"}  # ... and from r·eta when told so
