"""tools/bench_rule.py (settings from a trace alone) and tools/bench_quality.py (the one-rule bench)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from tests.test_sim_studies import _tool

rule = _tool("bench_rule")
bench = _tool("bench_quality")


def _trace(path, lengths, time_per_step=None, seed=0):
    """A trace of curves of the given lengths (a ``time`` column when ``time_per_step`` is given)."""
    rng = np.random.default_rng(seed)
    rows = ["trial,step,score" + (",time" if time_per_step else "")]
    for i, length in enumerate(lengths):
        quality = rng.uniform(0.2, 0.9)
        for step in range(1, length + 1):
            row = f"c{i},{step},{quality * (1 - 0.7 ** step):.5f}"
            if time_per_step:
                row += f",{step * time_per_step[i % len(time_per_step)]:.3f}"
            rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n")


def test_the_rule_derives_every_setting_from_the_trace_alone(tmp_path):
    curves = tmp_path / "curves"
    _trace(curves / "cnn-a.csv", [10, 20, 20, 40])  # no time column: 30 s a step
    _trace(curves / "nmt-xx-yy.csv", [5, 7, 9])
    _trace(curves / "lcbench" / "lcbench-1.csv", [12, 12, 12], time_per_step=[2.0, 4.0, 6.0])
    (curves / "lcbench" / "lcbench-1-configs.csv").write_text("trial,lr\nc0,0.1\n")  # no trace: skipped
    found = {r.name: r for r in rule.rules(curves)}
    assert sorted(found) == ["cnn-a", "lcbench/lcbench-1", "nmt-xx-yy"]
    cnn = found["cnn-a"]
    assert (cnn.family, cnn.mode, cnn.R, cnn.step_time, cnn.median_step) == ("DL", "max", 40, 30.0, 30.0)
    assert cnn.M == 20 * 30.0 and cnn.deadlines == (1200.0, 2400.0, 4800.0)  # median curve: 20 steps
    nmt = found["nmt-xx-yy"]
    assert (nmt.family, nmt.mode, nmt.R, nmt.M) == ("NMT", "min", 9, 7 * 30.0)
    lc = found["lcbench/lcbench-1"]
    assert (lc.family, lc.mode, lc.step_time, lc.median_step) == ("LCBench", "max", None, 4.0)
    assert lc.M == 12 * 4.0
    plain, sqrt = rule.SYSTEMS
    assert (plain.scaling, lc.startup(plain)) == ("none", 0.0) and (sqrt.scaling, lc.startup(sqrt)) == ("sqrt", 4.0)
    raw = rule.experiment_raw(lc, sqrt, [{"name": "hypersched"}])
    assert raw["scheduler"] == {"kind": "hypersched", "r": 1, "R": 12, "eta": 4, "scaling": "sqrt"}
    assert raw["resources"] == {"atoms": 8} and raw["matrix"] == {"deadline": [96.0, 192.0, 384.0]}
    assert raw["workload"]["startup"] == 4.0 and "step_time" not in raw["workload"]  # the time column


def _frame(regrets: dict[str, list[float]], oracle: float = 1.0, key=("DL", "t", "plain", 2)) -> pd.DataFrame:
    rows = []
    for variant, values in regrets.items():
        for seed, regret in enumerate(values):
            rows.append(dict(zip(bench.KEY, key), deadline=100.0, variant=variant, seed=seed,
                             best_score=oracle - regret, regret=regret, oracle_score=oracle, idle_steps=0.5 * seed))
    return pd.DataFrame(rows)


def test_a_cell_is_judged_by_the_regret_paired_by_seed_against_the_better_baseline():
    # random is the better baseline (mean 0.10 against 0.20); HyperSched is worse by 0.02 in every seed
    frame = _frame({"asha": [0.2] * 4, "random": [0.1, 0.12, 0.08, 0.1], "one_epoch": [0.3] * 4,
                    "hypersched": [0.12, 0.14, 0.10, 0.12]})
    row = bench.cell_table(frame).iloc[0]
    assert row["baseline"] == "random" and row["gap"] == pytest.approx(0.02) and row["gap se"] == pytest.approx(0)
    assert row["verdict"] == "worse" and row["ratio"] == pytest.approx(0.12 / 0.10)
    assert row["idle max"] == 1.5
    noisy = _frame({"asha": [0.2] * 4, "random": [0.1, 0.3, 0.0, 0.1], "one_epoch": [0.3] * 4,
                    "hypersched": [0.2, 0.0, 0.2, 0.0]})
    assert bench.cell_table(noisy).iloc[0]["verdict"] == "par"  # the gap is within two standard errors
    assert bench.verdict(-0.05, 0.01) == "better" and bench.verdict(0.0, 0.0) == "par"
    counts = bench.tally([bench.Verdict.WORSE, bench.verdict(0.0, 0.0), bench.Verdict.WORSE])
    assert [counts[v] for v in bench.Verdict] == [2, 1, 0, 0]  # every verdict counted, zeros included
    assert [v.shown for v in bench.Verdict] == ["**worse**", "par", "**better**", "no verdict"]


def test_x_over_best_is_a_geometric_mean_with_ties_at_the_oracle_floored():
    cells = pd.concat([_frame({"asha": [0.2], "random": [0.4], "one_epoch": [1.0], "hypersched": [0.1]},
                              key=("DL", "a", "plain", 2)),
                       _frame({"asha": [0.0], "random": [0.0005], "one_epoch": [1.0], "hypersched": [0.002]},
                              key=("LCBench", "b", "plain", 2))])
    table = bench.cell_table(cells)
    ratios = bench.x_over_best(table, ("asha", "random", "hypersched"))
    # cell a: best 0.1; cell b: regrets floored at 0.001 (x |oracle| = 1): asha and random tie at the floor
    assert ratios["hypersched"] == pytest.approx(math.sqrt(1.0 * 2.0))
    assert ratios["asha"] == pytest.approx(math.sqrt(2.0 * 1.0)) and ratios["random"] == pytest.approx(math.sqrt(4.0))
    summary = bench.summary(table)
    assert list(summary.index) == ["DL", "LCBench", "all"] and summary.loc["all", "cells"] == 2
    assert summary.loc["LCBench", "x / best"] == pytest.approx(2.0)


def test_the_bench_writes_families_verdicts_and_cells_for_every_trace_it_finds(tmp_path):
    curves = tmp_path / "curves"
    _trace(curves / "cnn-a.csv", [8, 8, 8, 8] * 6, seed=1)
    _trace(curves / "nmt-xx-yy.csv", [3, 5, 8, 4] * 6, seed=2)
    out = tmp_path / "quality.md"
    assert bench.main(["--seeds", "2", "--jobs", "1", "--curves", str(curves), "--out", str(out)]) == 0
    text = out.read_text()
    assert "| family | cells | ASHA / best | random / best | HyperSched / best |" in text
    for family in ("| DL | 6 |", "| NMT | 6 |", "| all | 12 |"):
        assert family in text
    rows = [line for line in text.splitlines() if line.startswith(("| cnn-a |", "| nmt-xx-yy |"))]
    assert len(rows) == 12  # 2 systems x 3 deadlines per trace
    assert all(cells.split(" | ")[13] in ("par", "**worse**", "**better**") for cells in rows)
    with pytest.raises(SystemExit):
        bench.main(["--seeds", "1", "--curves", str(curves), "--out", str(out), "--only", "nothing-*"])


needs_curves = pytest.mark.skipif(not (bench.CURVES / "nmt-ted-zh-en.csv").exists(), reason="shared curves absent")


@needs_curves
def test_the_shared_nmt_pair_under_the_rule(tmp_path):
    out = tmp_path / "quality.md"
    assert bench.main(["--seeds", "2", "--jobs", "1", "--only", "nmt-ted-zh-en", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| nmt-ted-zh-en | plain | 2M = 1200 s |" in text and "| nmt-ted-zh-en | sqrt | 8M = 4800 s |" in text
    assert "| NMT | 6 |" in text


def test_ours_against_a_peer_needs_two_standard_errors_and_more_than_the_cells_last_decimal():
    against = _tool("bench_samplers").against_peer
    assert against(-0.00003, 0.0) == "par"  # both at a task's best recorded score, theirs kept to 4 decimals
    assert (against(-0.0002, 0.0), against(0.01, 0.004), against(0.007, 0.004)) == ("worse", "better", "par")
    assert against(-0.5, float("nan")) == "no verdict"  # a peer cell of one seed has no standard error: not par


def test_a_peer_cell_of_one_seed_gets_no_verdict_rather_than_par():
    samplers = _tool("bench_samplers")
    ours = pd.DataFrame([{"system": "plain", "trace": "lcbench/lcbench-1", "factor": 2, "variant": variant,
                          "seed": seed, "best_score": 0.8 + 0.01 * seed}
                         for variant in ("hypersched+random", "hypersched+kde") for seed in range(3)])
    peers = pd.DataFrame([{"task": "lcbench-1", "factor": 2, "scheduler": "solo", "seed": 0, "best": 0.1}])
    page = samplers.render_peers(ours, peers, "hypersched+kde")
    assert "worse in 0, par in 0, better in 0 of 1 cells (no verdict in 1: a side measured on one seed)." in page
    assert page.rstrip().endswith("| solo | +0.7100 ± nan | no verdict |")


def test_the_samplers_bench_replays_a_trace_with_its_configurations_beside_the_synthetic_table(tmp_path):
    samplers = _tool("bench_samplers")
    curves = tmp_path / "curves"
    _trace(curves / "lcbench" / "lcbench-1.csv", [6] * 16, time_per_step=[2.0, 3.0], seed=3)
    _trace(curves / "cnn-a.csv", [6] * 8, seed=4)  # no configurations table: not in the real part
    rng = np.random.default_rng(0)
    (curves / "lcbench" / "lcbench-1-configs.csv").write_text("trial,lr,units\n" + "".join(
        f"c{i},{math.exp(rng.uniform(-9, 0))},{int(rng.integers(16, 256))}\n" for i in range(16)))
    out, raw = tmp_path / "samplers.md", tmp_path / "raw"
    assert samplers.main(["--seeds", "1", "--real-seeds", "2", "--samplers", "random", "kde", "kde:fit_from=0.5",
                          "--jobs", "1", "--curves", str(curves), "--out", str(out), "--raw", str(raw)]) == 0
    text = out.read_text()
    assert "## Real configurations" in text and "## Samplers on config-dependent synthetic curves" in text
    pairs = [line for line in text.splitlines() if line.startswith(("| asha + ", "| hypersched + "))]
    assert [line.split(" | ")[0] for line in pairs] == [
        "| asha + random", "| asha + kde", "| asha + kde:fit_from=0.5", "| hypersched + random", "| hypersched + kde",
        "| hypersched + kde:fit_from=0.5"]
    verdicts = pairs[1].split(" | ")[5]
    assert sum(int(n) for n in verdicts.split(" / ")) == 6  # 2 systems x 3 deadlines, against random sampling
    assert len([line for line in text.splitlines() if line.startswith("| lcbench-1 |")]) == 6
    assert "cnn-a" not in text.split("## Samplers on")[0]
    with pytest.raises(SystemExit):
        samplers.main(["--samplers", "kde", "--curves", str(curves), "--out", str(out)])
    for bad in ("kde:fit_from=2", "random:fit_from=0.5", "kde:fit_from", "kde:fit_from=["):  # exit 2, nothing run
        with pytest.raises(SystemExit) as info:
            samplers.main(["--samplers", "random", bad, "--curves", str(curves), "--out", str(out)])
        assert info.value.code == 2
    # rendered again from the kept runs, with a peer far below and one far above in every plain cell
    real = pd.read_csv(raw / "real.csv")
    best = real[real["variant"].str.startswith("hypersched")].groupby("factor")["best_score"].max()
    peers = pd.DataFrame([{"task": "lcbench-1", "factor": factor, "scheduler": name, "seed": seed,
                           "best": best[factor] + shift + 0.001 * seed}
                          for factor in (2, 4, 8) for name, shift in (("low", -0.5), ("high", 0.5))
                          for seed in range(3)])
    peers.to_csv(tmp_path / "peers.csv", index=False)
    again = tmp_path / "again.md"
    assert samplers.main(["--from-raw", str(raw), "--peers", str(tmp_path / "peers.csv"), "--out", str(again)]) == 0
    shown = again.read_text()
    assert text.split("\n## Samplers on")[0].rstrip("\n") in shown  # the same figures, from the kept runs
    assert "against the best peer: worse in 3, par in 0, better in 0 of 3 cells." in shown
    assert len([line for line in shown.splitlines() if line.startswith("| lcbench-1 | ") and "| high |" in line]) == 3
    # the same from the peers' cells (tools/bench_peers.py keeps them beside its page); a file of neither: exit 2
    peers_bench = _tool("bench_peers")
    peers_bench.peer_cells(peers).to_csv(tmp_path / "cells.csv", index=False)
    from_cells = tmp_path / "from-cells.md"
    assert samplers.main(["--from-raw", str(raw), "--peers", str(tmp_path / "cells.csv"), "--out",
                          str(from_cells)]) == 0
    assert f"Theirs read from `--peers {tmp_path / 'peers.csv'}`." in shown
    assert from_cells.read_text().replace("cells.csv", "peers.csv") == shown
    (tmp_path / "neither.csv").write_text("task,factor\nlcbench-1,2\n")
    with pytest.raises(SystemExit) as exit_code:
        samplers.main(["--from-raw", str(raw), "--peers", str(tmp_path / "neither.csv"), "--out", str(from_cells)])
    assert exit_code.value.code == 2
    # runs kept in two folders, each sampler from the first folder that has it: the same figures, each part's commit
    only_random, with_kde = tmp_path / "only-random", tmp_path / "with-kde"
    only_random.mkdir()
    real[real["sampler.name"] == "random"].to_csv(only_random / "real.csv", index=False)
    (only_random / "synthetic.csv").write_text((raw / "synthetic.csv").read_text())
    meta = json.loads((raw / "meta.json").read_text())
    (only_random / "meta.json").write_text(json.dumps({**meta, "samplers": ["random"], "provenance": [
        {"samplers": ["random"], "used": ["random"], "seconds": 1.0, "commit": "0ddba11"}]}))
    shutil.copytree(raw, with_kde)
    (with_kde / "meta.json").write_text(json.dumps({**meta, "provenance": [
        {"samplers": meta["samplers"], "used": meta["samplers"], "seconds": 2.0, "commit": "feedbee"}]}))
    merged = tmp_path / "merged.md"
    assert samplers.main(["--from-raw", str(only_random), str(with_kde), "--out", str(merged)]) == 0
    table = merged.read_text().split("\n## Samplers on")[0]
    assert ("`--samplers random` in 1 s on commit 0ddba11; `--samplers random kde kde:fit_from=0.5` in 2 s on commit "
            "feedbee (its kde kde:fit_from=0.5 rows); rendered together by `--from-raw`") in table
    assert table.split("Seeds 0..")[1] == text.split("\n## Samplers on")[0].split("Seeds 0..")[1]
    (with_kde / "meta.json").write_text(json.dumps({**meta, "real_seeds": 3}))
    with pytest.raises(SystemExit):
        samplers.main(["--from-raw", str(only_random), str(with_kde), "--out", str(merged)])
