"""Hostile or careless specs fail fast, with exit code 2 and the field named, and leave nothing behind."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hpcsched.core.durations import parse_duration
from hpcsched.core.errors import SpecError
from hpcsched.spec import load_experiment, parse_experiment
from tests.runs import REPO, TOY

GOOD = {
    "name": "x", "metric": {"name": "acc", "mode": "max"},
    "scheduler": {"kind": "hypersched", "r": 2, "R": 50, "eta": 4},
    "resources": {"atoms": 8}, "deadline": "30m",
    "workload": {"kind": "synthetic", "startup": "5s"},
}

BOMB = textwrap.dedent("""\
    a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
    h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
    name: [*h, *h, *h, *h, *h, *h, *h, *h, *h]
    """)


def _problems(raw) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_experiment(raw)
    return info.value.problems


def _one(raw, field: str) -> str:
    problems = _problems(raw)
    assert len(problems) == 1 and problems[0].startswith(field + ":"), problems
    return problems[0]


def test_a_yaml_alias_bomb_is_refused_before_anything_expands_it(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    with pytest.raises(SpecError, match="expands to more than"):
        load_experiment(path)


def test_a_document_that_contains_itself_is_refused():
    raw = dict(GOOD)
    loop: list = []
    loop.append(loop)
    raw["space"] = {"a": {"choice": loop}}
    with pytest.raises(SpecError, match="refers to itself"):
        parse_experiment(raw)


def test_a_huge_spec_file_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("name: x\n" + "#" * (2 << 20))
    with pytest.raises(SpecError, match="a spec is at most"):
        load_experiment(path)


@pytest.mark.parametrize("name", ["../../../x", "a/b", "x\0y", ".hidden", "", "é" * 3, "x" * 101, 7])
def test_run_names_are_safe_directory_names(name):
    message = _one({**GOOD, "name": name}, "name")
    assert "letters, digits" in message


@pytest.mark.parametrize("text", ["00:99:99", "1.5.5s", "١٢s", "1h30", "99999999999999999999d", "12:60",
                                  "1-24:00:00", "x" * 10_000])
def test_durations_have_one_strict_grammar(text):
    with pytest.raises(ValueError):
        parse_duration(text)
    message = _one({**GOOD, "deadline": text}, "deadline")
    assert len(message) < 300


@pytest.mark.parametrize("text, seconds", [("1h30m", 5400), ("01:02:03", 3723), ("1-00:00:10", 86410),
                                           ("59:59", 3599), ("2.5m", 150), ("90", 90)])
def test_the_durations_users_write_still_parse(text, seconds):
    assert parse_duration(text) == seconds


def test_sizes_are_bounded_with_the_field_named():
    assert "at most 1000000" in _one({**GOOD, "space": {f"p{i}": {"grid": list(range(1000))} for i in range(4)},
                                      "workload": None, "trainable": f"{TOY}:toy"}, "space")
    assert "<= 100000" in _one({**GOOD, "resources": {"atoms": 1_000_000_000}}, "resources.atoms")
    assert "<= 10000000" in _one({**GOOD, "scheduler": {**GOOD["scheduler"], "R": 10**12}}, "scheduler.R")
    assert "<= 1000" in _one({**GOOD, "scheduler": {**GOOD["scheduler"], "eta": 1e9}}, "scheduler.eta")
    grid = {"matrix": {"seed": list(range(200)), "deadline": [60 + i for i in range(100)]}}
    assert "20000 cells" in _one({**GOOD, **grid}, "matrix")


def test_a_stop_margin_as_long_as_the_deadline_is_an_error():
    message = _one({**GOOD, "deadline": "30s", "controller": {"stop_margin": "30s"}}, "controller.stop_margin")
    assert "below the deadline" in message


def test_a_scaling_table_with_a_bad_entry_is_an_error_not_a_shorter_table():
    problems = _problems({**GOOD, "scheduler": {**GOOD["scheduler"], "scaling": {1: 1, 2: -1.8, 4: 3.2}}})
    assert len(problems) == 1 and problems[0].startswith("scheduler.scaling") and "-1.8" in problems[0]


def _cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hpcsched", *args], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("extra", ["deadline: 99999999999999999999d\n", "name: ../../../x\ndeadline: 1m\n",
                                   "deadline: 1m\nresources: {atoms: 1000000000}\n", ""])
def test_cli_run_with_a_hostile_spec_exits_2_and_makes_no_run_dir(tmp_path, extra):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"trainable: {TOY}:toy\nspace: {{quality: 0.5}}\n" + extra)
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    proc = _cli("run", str(spec), tmp_path=work)  # the default run dir: runs/<name>-<time>
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and ("problem" in proc.stderr or "required" in proc.stderr)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["a", "a/b", "a/b/c", "spec.yaml"]


def test_cli_simulate_with_an_alias_bomb_exits_2(tmp_path):
    spec = tmp_path / "bomb.yaml"
    spec.write_text(BOMB)
    proc = _cli("simulate", str(spec), "--out", str(tmp_path / "out"), tmp_path=tmp_path)
    assert proc.returncode == 2 and "expands to more than" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def _deep(depth: int) -> str:
    return "deep: " + "[" * depth + "]" * depth + "\n"


@pytest.mark.parametrize("text, place, words", [
    (_deep(3000), "line 3, column 106", "nested more than 100 levels deep"),  # after the two lines above
    (_deep(5000), "line 3, column 106", "nested more than 100 levels deep"),
    ("deadline: 1m\nseed: 1\ndeadline: 2h\n", "line 5, column 1", "duplicate key 'deadline' (first at line 3)"),
    ("scheduler: {kind: asha, eta: 2, eta: 3}\n", "line 3, column 33", "duplicate key 'eta' (first at line 3)"),
    ("".join(f"a{i}: &a{i} [*a{i - 1}]\n" if i else "a0: &a0 [1]\n" for i in range(3000)), "(top level)",
     "nests more than 100 levels deep"),
], ids=["nested-3000", "nested-5000", "deadline-twice", "eta-twice", "aliases-3000-deep"])
@pytest.mark.parametrize("command", ["run", "check"])
def test_deep_or_repeated_yaml_is_exit_2_naming_the_place(tmp_path, text, place, words, command):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"trainable: {TOY}:toy\nspace: {{quality: 0.5}}\n" + text)
    proc = _cli(command, str(spec), tmp_path=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert place in proc.stderr and words in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "runs").exists()


def test_merge_keys_may_still_override_what_they_merge():
    from hpcsched.spec.yaml_text import load_yaml

    assert load_yaml("base: &b {eta: 4, r: 2}\nscheduler: {<<: *b, eta: 2}\n")["scheduler"] == {"eta": 2, "r": 2}


def test_check_refuses_a_spec_without_a_deadline_as_run_does(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"trainable: {TOY}:toy\nspace: {{quality: 0.5}}\nresources: {{atoms: 1, gpus_per_atom: 0}}\n")
    for command in ("check", "run"):
        proc = _cli(command, str(spec), tmp_path=tmp_path)
        assert proc.returncode == 2 and "deadline: required" in proc.stderr, (command, proc.stdout, proc.stderr)
    spec.write_text(spec.read_text() + "deadline: 1m\n")
    proc = _cli("check", str(spec), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
