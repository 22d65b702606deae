"""``hpcsched report``: figures and summary.md for run directories and simulator output."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from hpcsched.analysis.report import build_report  # noqa: E402
from hpcsched.cli.main import build_parser, cmd_report  # noqa: E402
from hpcsched.core.errors import RunDirError  # noqa: E402
from hpcsched.core.records import Launched, RunStarted, Running, TrialCreated  # noqa: E402
from hpcsched.loop.simulate import simulate_experiment  # noqa: E402
from hpcsched.spec import parse_experiment  # noqa: E402

from tests.test_analysis import SMALL, hand_records, simulated_journal, write_records  # noqa: E402


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG file, checking its signature."""
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def assert_figures(files: list[Path], names: list[str]) -> None:
    by_name = {f.name: f for f in files}
    for name in names:
        assert name in by_name, f"{name} not written: {sorted(by_name)}"
        f = by_name[name]
        assert f.stat().st_size > 5000, f"{f} is only {f.stat().st_size} bytes"
        width, height = png_size(f)
        assert 400 <= width <= 2500 and 250 <= height <= 2000, (f, width, height)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A run directory laid out as a real one, holding a simulated journal."""
    root = tmp_path_factory.mktemp("run")
    simulated_journal(root / "events.jsonl")
    (root / "spec.yaml").write_text("name: small\nmetric: {name: accuracy, mode: max}\n")
    return root


def test_report_of_a_run_directory(run_dir):
    files = build_report(run_dir)
    assert [f.parent for f in files] == [run_dir / "report"] * 7
    assert_figures(files, ["gantt.png", "scores.png", "usage.png", "allocation.png", "params.png", "parallel.png"])
    text = (run_dir / "report" / "summary.md").read_text()
    for needle in ("# Run report: small", "## Best", "score = **", "| completed |", "exploration stopped",
                   "![What each trial was doing when](gantt.png)", "![Scores against step and time](scores.png)",
                   "finished (deadline)"):
        assert needle in text, needle


def test_score_lines_never_join_a_pause_to_its_resume(run_dir):
    from hpcsched.analysis import load_run
    from hpcsched.analysis.plots import launch_segments

    run = load_run(run_dir)
    segments = launch_segments(run)
    assert len(segments) == len(run.scores) and segments["segment"].nunique() > segments["trial"].nunique()
    launches = run.allocations
    resumed = launches[launches["reason"] != "start"]
    assert len(resumed)  # the small simulated run pauses and resumes trials
    for _, part in segments.groupby("segment"):
        assert part["trial"].nunique() == 1
        mine = launches[launches["trial"] == part["trial"].iloc[0]]["launch_seq"]
        inside = mine[(mine > part["seq"].min()) & (mine < part["seq"].max())]
        assert inside.empty, "a line would cross a relaunch"
    per_trial = segments.groupby("trial")["segment"].nunique()
    launch_counts = launches.groupby("trial").size()
    assert (per_trial <= launch_counts.reindex(per_trial.index)).all()


def test_report_of_a_simulator_output(tmp_path):
    raw = dict(SMALL, deadline=6, matrix={"resources.atoms": [2, 4], "deadline": [4, 6]})
    simulate_experiment(parse_experiment(raw), [0, 1], tmp_path / "sim")
    files = build_report(tmp_path / "sim", tmp_path / "out")
    assert_figures(files, ["best_score.png", "regret.png", "gantt-asha.png", "gantt-hypersched.png"])
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "| resources.atoms | deadline | variant | seeds | best score | regret |" in text
    assert text.count(" ± ") >= 16 and "16 runs: 4 matrix cell(s) × 2 variant(s) × 2 seed(s)" in text
    assert "![Allocation of asha (atoms=4,deadline=6, seed 0)](gantt-asha.png)" in text  # the most informative cell


def test_report_of_a_run_in_progress_with_a_torn_line(run_dir, tmp_path):
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    cut = len(lines) // 3
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "events.jsonl").write_text("".join(lines[:cut]) + lines[cut][:15])
    files = build_report(tmp_path / "run")
    assert_figures(files, ["gantt.png", "scores.png", "usage.png"])
    text = (tmp_path / "run" / "report" / "summary.md").read_text()
    assert "**in progress**" in text and "a torn last line skipped" in text


def test_report_with_trials_without_scores_and_without_trials(tmp_path):
    # the hand-built run: trial d never launched, c still running, no RunFinished
    write_records(tmp_path / "hand" / "events.jsonl", hand_records())
    files = build_report(tmp_path / "hand")
    assert_figures(files, ["gantt.png", "scores.png", "usage.png"])
    text = (tmp_path / "hand" / "report" / "summary.md").read_text()
    assert "- b: boom" in text and "| created | 1 |" in text
    # a run that launched one trial that has not reported yet
    started = RunStarted(100.0, "fresh", 160.0, 2, 0, "d", "v", ("0", "1"))
    write_records(tmp_path / "fresh" / "events.jsonl",
                  [started, TrialCreated(100.0, "t0", 0, {}), Launched(100.0, "t0", ("0",), "start"),
                   Running(101.0, "t0", 1.0)])
    files = build_report(tmp_path / "fresh")
    assert {f.name for f in files} == {"gantt.png", "scores.png", "usage.png", "allocation.png", "params.png",
                                       "parallel.png", "summary.md"}
    assert "No trial has reported a score yet." in (tmp_path / "fresh" / "report" / "summary.md").read_text()
    # a run that has only just started
    write_records(tmp_path / "empty" / "events.jsonl", [started])
    files = build_report(tmp_path / "empty", tmp_path / "empty-report")
    assert all(f.is_file() for f in files) and len(files) == 7


def test_not_a_run_is_a_clear_error(tmp_path):
    with pytest.raises(RunDirError, match=f"{tmp_path}: not a run directory"):
        build_report(tmp_path)
    with pytest.raises(RunDirError, match="no such"):
        build_report(tmp_path / "nope")
    assert not (tmp_path / "report").exists()


def test_command_line_entry_points_on_a_lone_journal_file(run_dir, tmp_path, capsys):
    journal = tmp_path / "seed-0.jsonl"
    shutil.copy(run_dir / "events.jsonl", journal)
    parser = build_parser()
    args = parser.parse_args(["report", str(journal), "--max-gantt-trials", "5", "--mode", "max"])
    assert cmd_report(args) == 0
    printed = capsys.readouterr().out.split()
    out = tmp_path / "seed-0-report"  # the default beside a journal file
    assert printed == [str(out / n) for n in ("gantt.png", "scores.png", "usage.png", "allocation.png",
                                              "params.png", "parallel.png", "summary.md")]
    assert_figures([Path(p) for p in printed], ["gantt.png"])
    with pytest.raises(SystemExit):
        parser.parse_args(["report", str(run_dir), "--max-gantt-trials", "0"])
    with pytest.raises(RunDirError):
        cmd_report(parser.parse_args(["report", str(tmp_path / "missing")]))


def test_the_command_line_part_imports_cheaply():
    code = ("import sys\n"
            "from hpcsched.cli.main import build_parser\n"
            "build_parser().parse_args(['report', 'somewhere'])\n"
            "print(sorted(m for m in ('pandas', 'matplotlib', 'numpy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
