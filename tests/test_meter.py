"""``hpcsched simulate``'s progress: a bar on a terminal, a line per finished matrix cell otherwise."""

from __future__ import annotations

import io

from hpcsched.cli.main import main
from hpcsched.cli.meter import Meter


class Ticks:
    """A clock that advances one second per reading."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_off_a_terminal_a_line_per_finished_group_with_elapsed_and_left():
    out = io.StringIO()
    meter = Meter({"a": 2, "b": 2}, out, tty=False, clock=Ticks(), shape="2 cells x 1 variant x 2 seeds")
    meter.start()
    for group in ("a", "b", "a", "b"):
        meter.step(group)
    meter.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "4 runs: 2 cells x 1 variant x 2 seeds"
    assert lines[1].startswith("a: done (1/2 cells, 3/4 runs, ") and "elapsed, ~" in lines[1] and "left" in lines[1]
    assert lines[2].startswith("b: done (2/2 cells, 4/4 runs, ")
    assert len(lines) == 3


def test_on_a_terminal_one_bar_redrawn_in_place():
    out = io.StringIO()
    meter = Meter({"a": 3}, out, tty=True, clock=Ticks())
    meter.start()
    for _ in range(3):
        meter.step("a")
    meter.close()
    text = out.getvalue()
    assert text.count("\r[") == 4 and text.endswith("\n") and text.count("\n") == 1
    assert "3/3 runs" in text.split("\r")[-1] and "#" * 28 in text


def test_simulate_reports_progress_per_cell_on_stderr(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: tiny\nmetric: {name: score, mode: max}\nscheduler: {kind: asha, r: 5, R: 50, eta: 4}\n"
                    "resources: {atoms: 2}\ndeadline: 3\nspace: {lr: {loguniform: [1.0e-4, 1.0]}}\n"
                    "workload: {kind: synthetic, step_time: 0.1, startup: 0.3}\n"
                    "matrix: {deadline: [2, 3]}\n")
    assert main(["simulate", str(spec), "--out", str(tmp_path / "out"), "--seeds", "2", "--jobs", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "4 runs: 2 cell(s) x 1 variant(s) x 2 seed(s)"
    assert err[1].startswith("deadline=2: done (1/2 cells, 2/4 runs") and err[2].startswith("deadline=3: done")
