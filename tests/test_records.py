"""Journal records: every kind survives JSON (as the journal writes it) unchanged, vocabularies come
back typed, and bad lines are refused with the reason."""

from __future__ import annotations

import json

import pytest

from hpcsched.core.records import (RECORD_TYPES, ControllerResumed, ControllerStopped, EntranceClosed, Exited, Launched,
                                   LaunchReason, Reported, RunExtended, RunFinished, RunStarted, Running, StopIntent,
                                   StopRequested, TrialCreated, from_json, to_json)
from hpcsched.core.outcomes import ExitOutcome

ONE_OF_EACH = [
    RunStarted(0.0, "exp", 60.0, 2, 7, "d1g3st", "hypersched", ("n1:0", "n1:1"), "acc", "min"),
    TrialCreated(0.0, "t0000", 0, {"lr": 0.1, "nested": {"a": [1, 2]}}),
    Launched(0.0, "t0000", ("n1:0",), LaunchReason.START),
    Running(1.5, "t0000", 1.5),
    Reported(2.0, "t0000", 1, 0.5, "step-00000001.pt", {"loss": 1.25}),
    Reported(2.5, "t0000", 2, 0.6),
    StopRequested(3.0, "t0000", StopIntent.RESIZE, 2, ("n1:1",), "grow 1->2"),
    Exited(3.5, "t0000", ExitOutcome.CHECKPOINTED, 2),
    Launched(3.5, "t0000", ("n1:0", "n1:1"), LaunchReason.RESIZE, 2),
    EntranceClosed(4.0, "time left ~ time needed"),
    ControllerStopped(5.0, "interrupted by SIGTERM"),
    ControllerResumed(9.0, ("n2:0", "n2:1"), "host", 123),
    RunExtended(10.0, 120.0, 60.0, 60.0),
    RunFinished(120.0, "deadline", "t0000", 0.6, 2),
]


def test_every_record_kind_round_trips_through_the_journals_json():
    assert {r.kind for r in ONE_OF_EACH} == set(RECORD_TYPES)
    for record in ONE_OF_EACH:
        line = json.dumps(to_json(record), separators=(",", ":"), allow_nan=False)
        back = from_json(json.loads(line))
        assert back == record and type(back) is type(record)


def test_vocabularies_are_written_as_their_words_and_read_back_typed():
    data = to_json(StopRequested(1.0, "t0001", StopIntent.PAUSE, reason="rung 4"))
    assert json.loads(json.dumps(data))["intent"] == "pause"
    back = from_json({"kind": "stop_requested", "t": 1.0, "trial": "t0001", "intent": "deadline"})
    assert back.intent is StopIntent.DEADLINE
    assert from_json({"kind": "launched", "t": 0, "trial": "t", "atoms": ["0"], "reason": "resume"}).reason \
        is LaunchReason.RESUME
    assert "metrics" not in to_json(Reported(1.0, "t", 1, 0.5))  # written only when there are some


@pytest.mark.parametrize("data, words", [
    ({"kind": "stop_requested", "t": 1.0, "trial": "t", "intent": "hibernate"}, "bad stop_requested record"),
    ({"kind": "launched", "t": 0, "trial": "t", "atoms": [], "reason": "whim"}, "bad launched record"),
    ({"kind": "teleported", "t": 0}, "unknown record kind 'teleported'"),
    ({"kind": "reported", "t": 0, "trial": "t"}, "bad reported record"),
    (["not", "an", "object"], "expected a JSON object"),
])
def test_a_bad_record_is_refused_naming_what_is_wrong(data, words):
    with pytest.raises(ValueError, match=words):
        from_json(data)


def test_every_field_of_every_record_has_a_type_the_reader_checks():
    import dataclasses

    from hpcsched.core.records import _ENUM_FIELDS, _value_check

    for cls in RECORD_TYPES.values():
        for f in dataclasses.fields(cls):
            if f.name != "kind":
                assert _value_check(str(f.type)) is not None or (cls, f.name) in _ENUM_FIELDS, (cls, f.name)


@pytest.mark.parametrize("data, words", [
    ({"kind": "reported", "t": "oops", "trial": "t", "step": 1, "score": 0.5}, "t must be a finite number"),
    ({"kind": "reported", "t": 1, "trial": "t", "step": True, "score": 0.5}, "step must be an integer"),
    ({"kind": "reported", "t": 1, "trial": 7, "step": 1, "score": 0.5}, "trial must be a string"),
    ({"kind": "launched", "t": 1, "trial": "t", "atoms": 5, "reason": "start"}, "atoms must be a list of strings"),
    ({"kind": "launched", "t": 1, "trial": "t", "atoms": [0], "reason": "start"}, "atoms must be a list of strings"),
    ({"kind": "run_finished", "t": 1, "reason": "deadline", "best_score": "high"}, "best_score must be a finite"),
    ({"kind": "trial_created", "t": 1, "trial": "t", "index": 0, "config": []}, "config must be a mapping"),
    ({"kind": "trial_created", "t": 1, "trial": "t", "index": 0, "config": {"a": json.loads("[" * 40 + "]" * 40)}},
     "nested at most 32"),
    ({"kind": "exited", "t": 1, "trial": "t", "outcome": "vanished"}, "bad exited record"),
    ({"kind": "run_started", "t": 1, "name": "x", "deadline": 9, "atoms": 1, "seed": 0, "spec_digest": "d",
      "variant": "v", "mode": "up"}, "bad run_started record"),
])
def test_a_field_of_the_wrong_type_is_refused_naming_the_field(data, words):
    with pytest.raises(ValueError, match=words):
        from_json(data)
    assert from_json({"kind": "run_finished", "t": 1, "reason": "deadline", "best_score": None}).best_score is None


def test_an_exit_of_the_environment_is_marked_retryable_only_where_it_is():
    retryable = Exited(3.5, "t0000", ExitOutcome.ERRORED, 2, "OSError: [Errno 28]", retryable=True)
    assert to_json(retryable)["retryable"] is True and from_json(to_json(retryable)) == retryable
    assert "retryable" not in to_json(Exited(3.5, "t0000", ExitOutcome.ERRORED, 2, "boom"))  # as in version 2


def test_a_trial_is_marked_as_the_model_s_proposal_only_where_it_is():
    proposed = TrialCreated(0.0, "t0007", 7, {"lr": 0.1}, from_model=True)
    assert to_json(proposed)["from_model"] is True and from_json(to_json(proposed)) == proposed
    drawn = to_json(TrialCreated(0.0, "t0000", 0, {"lr": 0.1}))
    assert "from_model" not in drawn and from_json(drawn).from_model is False  # as in version 3
    with pytest.raises(ValueError, match="from_model"):
        from_json({**drawn, "from_model": "yes"})
