"""Fuzzing the two readers of what users and trials write: a scores line and a spec.

Whatever they are given, they answer with a typed value or the project's own error (a ``BadLine`` or
None for a scores line, ``SpecError`` for a spec), never another exception, and what they accept
passes the validators downstream: a report the journal can hold and read back unchanged, a spec
that parses to itself again with every value within the spec's limits. Bounded and derandomized in
CI (the same examples every run); HPCSCHED_FUZZ_EXAMPLES=N searches N random examples per test.
"""

from __future__ import annotations

import json
import math
import os

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcsched.core.errors import SpecError
from hpcsched.core.records import Exited, Reported, from_json, to_json
from hpcsched.rundir.scores import (BadLine, ExitLine, ReportLine, ScoresReader, StartedLine, check_report,
                                    checkpoint_step, format_line, parse_line)
from hpcsched.core.outcomes import EXIT_OUTCOMES
from hpcsched.spec import parse_experiment
from hpcsched.spec.document import TOP_KEYS
from hpcsched.spec.model import MAX_ATOMS, MAX_ETA, MAX_STEPS
from hpcsched.spec.yaml_text import load_yaml

_EXAMPLES = int(os.environ.get("HPCSCHED_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_EXAMPLES or 300, derandomize=not _EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ---------------------------------------------------------------- scores lines

NUMBERS = st.one_of(st.integers(), st.integers(min_value=-(10**400), max_value=10**400),
                    st.floats(allow_nan=True, allow_infinity=True), st.booleans())
SCALARS = st.one_of(st.none(), NUMBERS, st.text(max_size=20),
                    st.sampled_from(["step-00000003.pt", "step-00000001.pkl", "../../etc/passwd", "nan", "report",
                                     "exit", "started", *EXIT_OUTCOMES]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=20)
LINE_KEYS = ["kind", "t", "launch", "token", "step", "score", "checkpoint", "metrics", "outcome", "error", "retryable"]


@st.composite
def score_lines(draw) -> bytes:
    """Lines near the format: its keys with values of any JSON type, at times deeply nested or huge."""
    data = {key: draw(JSON) for key in draw(st.lists(st.sampled_from(LINE_KEYS), unique=True))}
    if draw(st.booleans()):
        data["kind"] = draw(st.sampled_from(["started", "report", "exit", "boast"]))
        data["launch"] = draw(st.sampled_from(["t0000-l1", "t0001-l2"]))
    text = json.dumps(data, allow_nan=True)
    if draw(st.integers(0, 9)) == 0:  # a value nested far deeper than any parser recurses
        depth = draw(st.integers(500, 40_000))
        text = text[:-1] + (", " if len(data) else "") + '"metrics": {"x": ' + "[" * depth + "]" * depth + "}}"
    if draw(st.integers(0, 9)) == 0:
        text = text[:-1] + (", " if len(data) else "") + '"pad": "' + "x" * draw(st.integers(60_000, 70_000)) + '"}'
    if draw(st.integers(0, 9)) == 0:  # torn or mangled
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.text(max_size=5))
    return text.encode("utf-8", errors="surrogatepass") if draw(st.booleans()) else text.encode("utf-8", "replace")


def _check_accepted(line) -> None:
    """What the reader accepts, the writer writes back unchanged and the journal holds."""
    assert isinstance(line.t, float) and (math.isnan(line.t) or math.isfinite(line.t))
    assert isinstance(line.launch, str) and isinstance(line.token, str)
    if isinstance(line, ReportLine):
        assert type(line.step) is int and type(line.score) is float and math.isfinite(line.score)
        assert line.checkpoint == "" or checkpoint_step(line.checkpoint) == line.step
        for value in line.metrics.values():
            assert value is None or isinstance(value, (bool, str)) or (isinstance(value, (int, float)) and
                                                                       math.isfinite(value) and abs(value) < 2**64)
        check_report(line, 0, 100)
        record = Reported(1.0, "t0000", line.step, line.score, line.checkpoint, line.metrics)
    elif isinstance(line, ExitLine):
        assert line.outcome in EXIT_OUTCOMES and type(line.step) is int and isinstance(line.error, str)
        record = Exited(1.0, "t0000", line.outcome, line.step, line.error, line.retryable)
    else:
        assert isinstance(line, StartedLine)
        record = None
    if record is not None:
        assert from_json(json.loads(json.dumps(to_json(record), allow_nan=False))) == record
    if not math.isnan(line.t):
        assert parse_line(format_line(line).encode()) == line


@FUZZ
@given(score_lines())
def test_the_scores_reader_takes_any_line_and_accepts_only_valid_ones(raw):
    line = parse_line(raw)
    assert line is None or isinstance(line, (BadLine, StartedLine, ReportLine, ExitLine))
    if isinstance(line, BadLine):
        assert isinstance(line.reason, str) and len(line.reason) < 1000
    elif line is not None:
        _check_accepted(line)


@FUZZ
@given(st.lists(st.one_of(score_lines(), st.binary(max_size=200)), max_size=6), st.binary(max_size=30))
def test_the_scores_file_reader_takes_any_file(tmp_path_factory, lines, tail):
    path = tmp_path_factory.mktemp("scores") / "scores.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n" + tail)
    for line in ScoresReader(path, None).read() + ScoresReader(path, "t0000-l1", token="s").read():
        assert isinstance(line, (BadLine, StartedLine, ReportLine, ExitLine))


# ---------------------------------------------------------------- specs

SPEC_WORDS = st.sampled_from(["30s", "1h", "auto", "none", "hypersched", "asha", "random", "max", "min", "sqrt",
                              "linear", "uniform", "grid", "choice", "1e-3", "-5", "0", "", "99999999999999999999d"])
SPEC_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**8), st.integers(),
                         st.floats(allow_nan=True, allow_infinity=True), SPEC_WORDS, st.text(max_size=12))
SECTION_KEYS = st.sampled_from(["kind", "r", "R", "eta", "atoms", "gpus_per_atom", "cpus_per_atom", "name", "mode",
                                "startup", "step_time", "scaling", "speculative", "hang_timeout", "max_failures",
                                "poll_interval", "stop_margin", "uniform", "grid", "choice", "loguniform", "path",
                                "entrance", "allocation", "variants", "label"])
SPEC_VALUES = st.recursive(SPEC_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(SECTION_KEYS, st.text(max_size=6)), inner, max_size=5)),
    max_leaves=25)
VALID = {"name": "x", "metric": {"name": "acc", "mode": "max"}, "deadline": "30m",
         "scheduler": {"kind": "hypersched", "r": 2, "R": 50, "eta": 4}, "resources": {"atoms": 8},
         "workload": {"kind": "synthetic", "startup": "5s"}}


@st.composite
def spec_texts(draw) -> str:
    """YAML near a spec: a valid one with sections replaced or bent, or random keys; at times a key twice,
    nesting far too deep, or text that is no YAML."""
    raw = dict(VALID)
    for key in draw(st.lists(st.sampled_from([*TOP_KEYS, "junk"]), max_size=4)):
        raw[key] = draw(SPEC_VALUES)
    for section in draw(st.lists(st.sampled_from(["scheduler", "resources", "workload", "metric", "controller"]),
                                 max_size=3)):
        base = raw.get(section) if isinstance(raw.get(section), dict) else {}
        raw[section] = {**base, draw(SECTION_KEYS): draw(SPEC_VALUES)}
    try:
        text = yaml.safe_dump(raw, allow_unicode=True)
    except yaml.YAMLError:
        text = "name: x\n"
    roll = draw(st.integers(0, 9))
    if roll == 0:
        text += "deadline: 1h\n"  # a key twice
    elif roll == 1:
        depth = draw(st.integers(50, 6000))
        text += "deep: " + "[" * depth + "]" * depth + "\n"
    elif roll == 2:
        text = draw(st.text(max_size=200))
    return text


def _check_spec(experiment) -> None:
    """An accepted spec parses to itself again, and its values are within the spec's limits."""
    for cell in experiment.cells:
        spec = cell.spec
        assert parse_experiment(spec.raw).spec.digest == spec.digest
        for variant in spec.variants:
            s = variant.scheduler
            assert 1 <= s.r <= s.R <= MAX_STEPS and 2 <= s.eta <= MAX_ETA
        atoms = spec.resources.atoms
        assert atoms == "auto" or (type(atoms) is int and 1 <= atoms <= MAX_ATOMS)
        assert spec.deadline is None or (math.isfinite(spec.deadline) and 0 < spec.deadline <= 366 * 86400)
        assert spec.controller.max_failures is None or spec.controller.max_failures >= 1


@FUZZ
@given(spec_texts())
def test_the_spec_reader_takes_any_text_and_accepts_only_valid_specs(text):
    try:
        raw = load_yaml(text)
    except yaml.YAMLError:
        return  # read_yaml turns it into a SpecError naming the place
    try:
        experiment = parse_experiment(raw)
    except SpecError as exc:
        assert exc.problems and all(isinstance(p, str) for p in exc.problems)
        return
    _check_spec(experiment)
