"""The README's set-up commands, word for word, in a fresh copy of the tree and a new virtualenv."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hpcsched.core.records import FinishReason, Launched
from tests.runs import pause_lags, records

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Set up and run", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [b.strip() for b in blocks]


def readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text()
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def own_model_blocks() -> dict[str, str]:
    """The README's own-model example: its python, yaml and sh blocks, as written."""
    section = readme_section("Your own model")
    return {kind: block for kind, block in re.findall(r"```(python|yaml|sh)\n(.*?)```", section, flags=re.S)}


def test_the_readme_shows_the_own_model_example_as_the_tested_files_hold_it():
    blocks = own_model_blocks()
    example = REPO / "examples" / "own_model"
    assert blocks["python"] == (example / "train.py").read_text()
    assert blocks["yaml"] == (example / "search.yaml").read_text()
    assert blocks["sh"].strip() == ".venv/bin/hpcsched run examples/own_model/search.yaml"
    assert len(blocks["python"].splitlines()) <= 25 and len(blocks["yaml"].splitlines()) <= 12
    # the first screen: what it does, the set-up, then your own model, then the words
    text = (REPO / "README.md").read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[:3] == ["Set up and run", "Your own model", "Words"]
    for word in ("trial", "step", "R", "r", "eta", "rung", "atom", "resize", "exploration closed"):
        assert re.search(rf"^\| {re.escape(word)}[ ,|]", readme_section("Words"), flags=re.M), word


@pytest.mark.slow
@pytest.mark.torch
def test_the_readme_own_model_example_runs_as_written(tmp_path):
    blocks = own_model_blocks()
    (tmp_path / "train.py").write_text(blocks["python"])
    (tmp_path / "search.yaml").write_text(blocks["yaml"])
    command = blocks["sh"].strip().replace(".venv/bin/hpcsched", str(Path(sys.executable).parent / "hpcsched"))
    command = command.replace("examples/own_model/search.yaml", "search.yaml")
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = list((tmp_path / "runs").iterdir())
    result = json.loads((run / "result.json").read_text())
    assert FinishReason.planned(result["reason"]) and result["trials_started"] >= 4
    done = result["best_completed"]
    assert done is not None and done["step"] == 20 and done["score"] > 0.85  # a model trained to R


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_second():
    commands = readme_commands()[:2]
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    assert "hpcsched run experiments/quickstart/quickstart.yaml" in commands[0]
    assert commands[1] == "bash tools/test.sh"
    ci = (REPO / ".ci" / "run").read_text()
    assert "exec bash tools/test.sh" in ci


@pytest.mark.slow
@pytest.mark.torch
def test_quickstart_from_a_fresh_copy_as_the_readme_says(tmp_path):
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split()
    clone = tmp_path / "clone"
    for name in files:
        source = REPO / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    command = readme_commands()[0]
    proc = subprocess.run(["bash", "-c", command], cwd=clone, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "best: trial" in proc.stdout
    (run,) = list((clone / "runs").iterdir())
    result = json.loads((run / "result.json").read_text())
    # a planned end: the deadline, or the finalists trained to R with no time left to use
    assert FinishReason.planned(result["reason"]) and result["best"]["score"] > 0.9
    # HyperSched's mechanisms act: a model is trained to R, and once all ten have started a slot that comes free
    # grows a running trial or resumes a paused one (growth only where the overhead-aware test finds it pays:
    # where epochs are short against a launch, the paused trials are resumed instead; tools/bench_quickstart.py
    # counts the resizes)
    assert result["best_completed"] is not None and result["best_completed"]["step"] == result["max_steps"] == 30
    recs = records(run)
    last_start = max(r.t for r in recs if isinstance(r, Launched) and r.reason == "start")
    assert result["trials_started"] == 10 and any(isinstance(r, Launched) and r.reason in ("resize", "resume")
                                                  and r.t > last_start for r in recs)
    best, done = result["best"], result["best_completed"]
    if best["completed"]:  # the answer is the best configuration as a fully trained model: its step-R checkpoint
        assert best["step"] == 30
    else:  # (on a slow machine) a trial that could not reach R reported above every trained one: both are named
        assert best["trained_steps"] < 30 and best["peak_score"] >= done["score"]
        assert "(not trained to R = 30)" in proc.stdout and f"best fully trained (step 30): trial {done['trial']}" \
            in proc.stdout
    assert all(exited == decided for _, reason, decided, exited, _ in pause_lags(recs)
               if reason.startswith("rung"))  # no epoch trained after a pause at a rung
    assert result["best"]["checkpoint"] in proc.stdout
    check = ("import sys; sys.path.insert(0, 'experiments/quickstart'); import torch, train;"
             f"m = train.load_model({result['best']['checkpoint']!r});"
             "x, y, xv, yv = train.digits(); print((m(xv).argmax(1) == yv).float().mean().item())")
    loaded = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", check], cwd=clone,
                            capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr
    assert abs(float(loaded.stdout.strip()) - result["best"]["score"]) < 1e-6  # the checkpoint is that model
    # "Looking at a run": the set-up command installed what `hpcsched report` needs
    report = subprocess.run([str(clone / ".venv" / "bin" / "hpcsched"), "report", str(run)], cwd=clone,
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stdout[-2000:] + report.stderr[-2000:]
    written = {p.name for p in (run / "report").iterdir()}
    assert {"summary.md", "gantt.png", "scores.png"} <= written, written
    assert result["best"]["trial"] in (run / "report" / "summary.md").read_text()
