"""Tidy frames built from a parsed journal: trials, scores, allocations, events.

Pure functions of a ``JournalTable`` (and the run's start, last time seen and metric mode);
column names and dtypes are documented in docs/analysis.md. Work is vectorised over the
reports; only the lifecycle records (a few per launch) are replayed through ``RunState``,
the single source of truth of the trial state machine.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from hpcsched.core.errors import RunDirError
from hpcsched.core.mode import Mode
from hpcsched.core.records import RECORD_TYPES, Exited, Launched, Reported, Running, StopRequested
from hpcsched.rundir.scores import metric_number
from hpcsched.core.state import LIVE, RunState

from hpcsched.analysis.parse import JournalTable

INT_FIELDS = ("step", "atoms", "from_step", "index", "seed", "best_step", "version", "pid")
_FLOAT_FIELDS = ("t", "score", "startup", "deadline", "best_score")
_STR_FIELDS = ("trial", "reason", "intent", "outcome", "error", "best_trial", "name", "variant", "spec_digest",
               "checkpoint", "host")
EVENT_COLUMNS = ("seq", "t", "elapsed", "kind", "trial", "step", "score", "checkpoint", "atoms", "atom_ids",
                 "reason", "intent", "outcome", "error", "from_step", "startup", "index", "config", "extra",
                 "best_trial", "best_score", "best_step", "name", "variant", "seed", "deadline",
                 "spec_digest", "version", "host", "pid")
_NO_INDEX = -1


# ---------------------------------------------------------------- record tables


def kind_frame(table: JournalTable, cls: type, columns: dict[str, str]) -> pd.DataFrame:
    """One row per record of type ``cls``: seq plus the named attributes, cast to the given dtypes.

    For Launched, ``atoms`` is the count and ``atom_ids`` the tuple of ids.
    """
    rows: dict[str, list[Any]] = {"seq": []}
    rows.update({c: [] for c in columns})
    for seq, record in table.records:
        if type(record) is not cls:
            continue
        rows["seq"].append(seq)
        for c in columns:
            if cls is Launched and c in ("atoms", "atom_ids"):
                value = len(record.atoms) if c == "atoms" else record.atoms
            else:
                value = getattr(record, c)
            rows[c].append(value)
    frame = pd.DataFrame({"seq": pd.Series(rows["seq"], dtype="int64")})
    for c, dtype in columns.items():
        frame[c] = pd.Series(rows[c], dtype=dtype if dtype != "object" else object, index=frame.index)
    return frame


def launches_frame(table: JournalTable) -> pd.DataFrame:
    return kind_frame(table, Launched, {"t": "float64", "trial": "str", "atoms": "int64", "atom_ids": "object",
                                        "reason": "str", "from_step": "int64"})


def _codes(trials: pd.Index, values: pd.Series) -> np.ndarray:
    """Integer code of each trial id (position in ``trials``; -1 when unknown)."""
    return trials.get_indexer(values)


def last_before(left_code: np.ndarray, left_seq: np.ndarray, right_code: np.ndarray,
                right_seq: np.ndarray) -> np.ndarray:
    """For each left row, the position of the right row of the same trial with the largest seq below
    its own (both sides are in journal order); -1 where there is none."""
    if len(right_seq) == 0 or len(left_seq) == 0:
        return np.full(len(left_seq), _NO_INDEX, dtype=np.int64)
    width = int(max(left_seq.max(), right_seq.max())) + 1
    right_key = right_code.astype(np.int64) * width + right_seq
    order = np.argsort(right_key, kind="stable")
    sorted_key = right_key[order]
    left_key = left_code.astype(np.int64) * width + left_seq
    pos = np.searchsorted(sorted_key, left_key, side="left") - 1
    found = pos >= 0
    result = np.full(len(left_seq), _NO_INDEX, dtype=np.int64)
    candidates = order[np.where(found, pos, 0)]
    same = found & (right_code[candidates] == left_code)
    result[same] = candidates[same]
    return result


# ---------------------------------------------------------------- allocations


def allocations_frame(table: JournalTable, start: float, last_t: float) -> pd.DataFrame:
    """One row per launch: the interval a trial held its atoms (Launched .. Exited)."""
    launches = launches_frame(table)
    running = kind_frame(table, Running, {"t": "float64", "trial": "str", "startup": "float64"})
    stops = kind_frame(table, StopRequested, {"t": "float64", "trial": "str", "intent": "str", "reason": "str"})
    exits = kind_frame(table, Exited, {"t": "float64", "trial": "str", "outcome": "str", "step": "int64"})
    trials = pd.Index(pd.unique(launches["trial"]))
    l_code = _codes(trials, launches["trial"])
    l_seq = launches["seq"].to_numpy()
    n = len(launches)

    def owner(frame: pd.DataFrame) -> np.ndarray:  # the launch each record belongs to
        return last_before(_codes(trials, frame["trial"]), frame["seq"].to_numpy(), l_code, l_seq)

    def per_launch(frame: pd.DataFrame, column: str, which: str, fill: Any, dtype: str) -> pd.Series:
        out = pd.Series([fill] * n if dtype in ("str", "object") else np.full(n, fill), dtype=dtype)
        own = owner(frame)
        keep = own >= 0
        if keep.any():
            picked = pd.Series(frame[column].to_numpy()[keep], index=own[keep])
            picked = picked.groupby(level=0).first() if which == "first" else picked.groupby(level=0).last()
            out.iloc[picked.index.to_numpy()] = picked.to_numpy()
        return out

    running_at = per_launch(running, "t", "first", np.nan, "float64")
    startup = per_launch(running, "startup", "first", np.nan, "float64")
    intent = per_launch(stops, "intent", "last", None, "object")
    stop_reason = per_launch(stops, "reason", "last", None, "object")
    end = per_launch(exits, "t", "first", np.nan, "float64")
    outcome = per_launch(exits, "outcome", "first", None, "object")
    end_step = per_launch(exits, "step", "first", -1, "int64")
    end_seq = per_launch(exits, "seq", "first", -1, "int64")

    out_arr = outcome.to_numpy()
    intent_arr = intent.to_numpy()
    end_reason = np.where(pd.isna(out_arr), "open",
                          np.where(out_arr == "checkpointed",
                                   np.where(pd.isna(intent_arr), "checkpointed", intent_arr), out_arr))
    is_open = end_reason == "open"
    end_t = np.where(is_open, last_t, end.to_numpy())
    frame = pd.DataFrame({
        "trial": launches["trial"],
        "atoms": launches["atoms"].astype("int64"),
        "start": launches["t"],
        "end": end_t.astype("float64"),
        "reason": launches["reason"],
        "end_reason": pd.Series(end_reason, dtype="str"),
        "start_elapsed": launches["t"] - start,
        "end_elapsed": end_t - start,
        "duration": end_t - launches["t"].to_numpy(),
        "running_at": running_at,
        "startup": startup,
        "from_step": launches["from_step"],
        "end_step": _masked_int(end_step.to_numpy(), is_open),
        "stop_reason": pd.Series(stop_reason, dtype="str"),
        "atom_ids": launches["atom_ids"],
        "launch_seq": launches["seq"],
        "end_seq": _masked_int(end_seq.to_numpy(), is_open),
    })
    return frame


def _masked_int(values: np.ndarray, missing: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(values.astype("int64"), missing.astype(bool))


# ---------------------------------------------------------------- scores


_SCORE_COLUMNS = ("trial", "step", "score", "t", "elapsed", "atoms", "seq")


def scores_frame(table: JournalTable, start: float) -> pd.DataFrame:
    """One row per Reported record, with the atoms its trial held when it reported."""
    reports = table.reports
    launches = launches_frame(table)
    trials = pd.Index(pd.unique(pd.concat([launches["trial"], reports["trial"]], ignore_index=True)))
    owner = last_before(_codes(trials, reports["trial"]), reports["seq"].to_numpy(),
                        _codes(trials, launches["trial"]), launches["seq"].to_numpy())
    atoms = np.where(owner >= 0, launches["atoms"].to_numpy()[np.maximum(owner, 0)] if len(launches) else 0, 0)
    frame = pd.DataFrame({
        "trial": reports["trial"],
        "step": reports["step"],
        "score": reports["score"],
        "t": reports["t"],
        "elapsed": reports["t"] - start,
        "atoms": atoms.astype("int64"),
        "seq": reports["seq"],
    })
    for extra in reports.columns:  # fields added to Reported later (checkpoint, ...)
        if extra not in frame.columns and extra != "metrics":
            frame[extra] = reports[extra]
    if "metrics" in reports.columns:
        _add_metric_columns(frame, reports["metrics"])
    return frame


def metric_columns(scores: pd.DataFrame) -> list[str]:
    """The columns of a scores frame that hold metrics reported beside the score."""
    fields = {f.name for f in dataclasses.fields(Reported)}
    return [c for c in scores.columns if c not in _SCORE_COLUMNS and c not in fields]


def _add_metric_columns(frame: pd.DataFrame, metrics: pd.Series) -> None:
    """One column per metric the trials reported beside the score (NaN where a report has none; a
    non-finite value, journaled as a word, is a float again); a metric named like a column of the
    frame is ``metric.<name>``."""
    rows = [{k: metric_number(v) for k, v in m.items()} if isinstance(m, dict) else {} for m in metrics]
    if not any(rows):
        return
    expanded = pd.DataFrame.from_records(rows, index=frame.index)
    for name in expanded.columns:
        frame[name if name not in frame.columns else f"metric.{name}"] = expanded[name]


def running_best(scores: pd.DataFrame, mode: str) -> pd.DataFrame:
    """The best score so far after each report (journal order): t, elapsed, score, trial, step,
    one row per improvement."""
    if scores.empty:
        return pd.DataFrame({"t": [], "elapsed": [], "score": [], "trial": [], "step": []})
    values = scores["score"].to_numpy()
    best = Mode(mode).running_best(values)
    improved = np.r_[True, best[1:] != best[:-1]]
    out = scores.loc[improved, ["t", "elapsed", "score", "trial", "step"]]
    return out.reset_index(drop=True)


# ---------------------------------------------------------------- trials


def replay_lifecycle(table: JournalTable) -> RunState:
    """RunState after every record except the reports (statuses, atoms, launches, run times)."""
    state = RunState("max")
    for seq, record in table.records:
        try:
            state.apply(record)
        except (ValueError, KeyError, AttributeError) as exc:
            raise RunDirError(f"{table.path}: line {seq + 1} ({record.kind}) cannot be replayed: "
                              f"{exc}") from None
    return state


def trials_frame(table: JournalTable, scores: pd.DataFrame, allocations: pd.DataFrame, mode: str,
                 start: float, last_t: float) -> pd.DataFrame:
    """One row per trial, in creation order (see docs/analysis.md for the columns); ``start``: the run's."""
    state = replay_lifecycle(table)
    trials = list(state.trials.values())
    ids = pd.Index([t.trial_id for t in trials], dtype="str")
    frame = pd.DataFrame({"trial": pd.Series(ids, dtype="str"),
                          "index": pd.Series([t.index for t in trials], dtype="int64")})
    configs = pd.json_normalize([t.config for t in trials], sep=".") if trials else pd.DataFrame()
    for name in configs.columns:
        frame[f"config.{name}"] = configs[name].to_numpy()

    # per-trial aggregates of the reports (in journal order)
    codes = ids.get_indexer(scores["trial"])
    known = codes >= 0
    s = scores.loc[known, ["step", "score"]].assign(code=codes[known])
    groups = s.groupby("code", sort=True)
    n = len(ids)

    def spread(series: pd.Series, fill: Any, dtype: str) -> np.ndarray:
        out = np.full(n, fill, dtype=object if dtype == "Int64" else dtype)
        out[series.index.to_numpy()] = series.to_numpy()
        return out

    best_pos = groups["score"].idxmax() if mode == "max" else groups["score"].idxmin()
    best_rows = s.loc[best_pos.to_numpy()]
    best_score = spread(pd.Series(best_rows["score"].to_numpy(), index=best_pos.index), np.nan, "float64")
    best_step = spread(pd.Series(best_rows["step"].to_numpy(), index=best_pos.index), pd.NA, "Int64")
    last_score = spread(groups["score"].last(), np.nan, "float64")
    report_steps = spread(groups["step"].max(), 0, "int64")
    reports = spread(groups.size(), 0, "int64")

    a_codes = ids.get_indexer(allocations["trial"])
    a = allocations.assign(code=a_codes)
    a = a[a["code"] >= 0]
    a_groups = a.groupby("code", sort=True)
    last_atoms = spread(a_groups["atoms"].last(), 0, "int64")
    max_atoms = spread(a_groups["atoms"].max(), 0, "int64")
    first_start = spread(a_groups["start"].min(), np.nan, "float64")
    pauses = spread(a.loc[a["end_reason"] == "pause"].groupby("code").size(), 0, "int64")

    frame["status"] = pd.Series([t.status for t in trials], dtype="str")
    frame["atoms"] = last_atoms
    frame["max_atoms"] = max_atoms
    frame["launches"] = np.array([t.launches for t in trials], dtype="int64")
    frame["resizes"] = np.array([t.resizes for t in trials], dtype="int64")
    frame["pauses"] = pauses
    frame["reports"] = reports
    frame["steps"] = np.maximum(np.array([t.step for t in trials], dtype="int64"), report_steps)
    frame["checkpoint_step"] = np.array([t.checkpoint_step for t in trials], dtype="int64")
    frame["best_score"] = best_score
    frame["best_step"] = pd.array(best_step, dtype="Int64")
    frame["last_score"] = last_score
    frame["created_at"] = np.array([t.created_at for t in trials], dtype="float64")
    frame["first_start"] = first_start
    frame["ended_at"] = np.array([np.nan if t.status in LIVE or t.ended_at is None else t.ended_at
                                  for t in trials], dtype="float64")
    for absolute, relative in (("created_at", "created_elapsed"), ("first_start", "first_start_elapsed"),
                               ("ended_at", "ended_elapsed")):
        frame[relative] = frame[absolute] - start
    frame["run_time"] = np.array([t.run_time(max(last_t, state.now)) for t in trials], dtype="float64")
    frame["startup_total"] = np.array([float(sum(t.startups)) for t in trials], dtype="float64")
    frame["error"] = pd.Series([t.error for t in trials], dtype="str")
    return frame


# ---------------------------------------------------------------- events


def events_frame(table: JournalTable, start: float) -> pd.DataFrame:
    """Every journal record as a row, in journal order; NaN (or <NA>) where a field does not apply.

    ``atoms`` is a count for every kind (Launched's ids go to ``atom_ids``, as RunStarted's);
    ``kind`` is categorical.
    """
    reports = table.reports
    other_seq = np.array([seq for seq, _ in table.records], dtype=np.int64)
    seq = np.sort(np.concatenate([reports["seq"].to_numpy(np.int64), other_seq]))
    n = len(seq)
    at_report = np.searchsorted(seq, reports["seq"].to_numpy(np.int64))
    at_other = np.searchsorted(seq, other_seq)

    values: dict[str, list[Any]] = {}  # field -> values of the other records, in order
    where: dict[str, list[int]] = {}
    for pos, (_, record) in zip(at_other.tolist(), table.records):
        fields = dict(vars(record))
        fields["kind"] = record.kind
        if isinstance(record, Launched):
            fields["atom_ids"], fields["atoms"] = record.atoms, len(record.atoms)
        for name, value in fields.items():
            values.setdefault(name, []).append(value)
            where.setdefault(name, []).append(pos)
    report_fields = [c for c in reports.columns if c != "seq"]
    for name in report_fields:
        values.setdefault(name, [])
        where.setdefault(name, [])

    columns: dict[str, Any] = {"seq": seq}
    for name in list(dict.fromkeys([*EVENT_COLUMNS, *values])):
        if name in ("seq", "elapsed") or name not in values:
            continue
        pos = np.asarray(where[name], dtype=np.int64)
        extra = reports[name].to_numpy() if name in report_fields else None
        if extra is not None:
            pos = np.concatenate([at_report, pos])
        if name in INT_FIELDS:
            data = np.zeros(n, dtype=np.int64)
            mask = np.ones(n, dtype=bool)
            present = np.array([v is not None for v in values[name]], dtype=bool)
            got = np.array([0 if v is None else v for v in values[name]], dtype=np.int64)
            if extra is not None:
                got, present = np.concatenate([extra.astype(np.int64), got]), np.r_[np.ones(len(extra), bool), present]
            data[pos] = got
            mask[pos] = ~present
            columns[name] = pd.arrays.IntegerArray(data, mask)
        elif name in _FLOAT_FIELDS:
            data = np.full(n, np.nan)
            got = np.array([np.nan if v is None else v for v in values[name]], dtype=np.float64)
            data[pos] = np.concatenate([extra, got]) if extra is not None else got
            columns[name] = data
        elif name in _STR_FIELDS:  # categorical: cheap to build and to hold for sparse columns
            got = np.empty(len(values[name]), dtype=object)
            got[:] = values[name]
            codes = np.full(n, -1, dtype=np.int64)
            codes[pos], uniques = pd.factorize(np.concatenate([extra.astype(object), got]) if extra is not None
                                               else got)
            columns[name] = pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype="str"))
        else:
            data = np.full(n, np.nan, dtype=object)
            got = np.empty(len(values[name]), dtype=object)
            got[:] = values[name]
            data[pos] = np.concatenate([extra, got]) if extra is not None else got
            columns[name] = data
        if name == "t":
            columns["elapsed"] = columns["t"] - start
    kinds = np.empty(n, dtype=object)
    kinds[at_report] = "reported"
    kinds[at_other] = values.get("kind", [])
    columns["kind"] = pd.Categorical(kinds, categories=list(RECORD_TYPES))
    frame = pd.DataFrame(columns)
    ordered = [c for c in EVENT_COLUMNS if c in frame.columns]
    return frame[ordered + [c for c in frame.columns if c not in ordered]]
