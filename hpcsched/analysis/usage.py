"""Atoms in use over time, from the allocation intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd


def usage_curve(allocations: pd.DataFrame, start: float = 0.0, until: float | None = None,
                by: str | None = None) -> pd.DataFrame:
    """Atoms held over time as a step function: one row per moment the usage changes.

    Columns: t (absolute), elapsed (t - start), atoms (held from t until the next row) and, with
    ``by`` (a column of ``allocations``, e.g. end_reason), one column per value of it holding
    that group's atoms. Open intervals (end_reason "open") do not end; with ``until`` a last row
    at that time repeats the final usage (for plotting up to it).

    Changes are applied in journal order (``launch_seq``, ``end_seq``), as the controller's atom
    pool saw them; records stamped by trials may carry times slightly out of that order, so a
    change's time is the latest time seen up to it. Without those columns, changes go by time,
    releases first at equal times.
    """
    alloc = allocations
    ends_mask = (alloc["end_reason"] != "open").to_numpy() if "end_reason" in alloc else np.ones(len(alloc), bool)
    times = np.concatenate([alloc["start"].to_numpy(float), alloc["end"].to_numpy(float)[ends_mask]])
    deltas = np.concatenate([alloc["atoms"].to_numpy(np.int64), -alloc["atoms"].to_numpy(np.int64)[ends_mask]])
    groups = None
    if by is not None:
        values = alloc[by].astype("str").to_numpy()
        groups = np.concatenate([values, values[ends_mask]])
    if "launch_seq" in alloc and "end_seq" in alloc:
        seqs = np.concatenate([alloc["launch_seq"].to_numpy(np.int64),
                               alloc["end_seq"].to_numpy(np.int64, na_value=-1)[ends_mask]])
        order = np.argsort(seqs, kind="stable")
        times = np.maximum.accumulate(times[order]) if len(order) else times
    else:
        order = np.lexsort((deltas, times))  # by time, then releases (negative) first
        times = times[order]
    deltas = deltas[order]
    last_of_time = np.r_[times[1:] != times[:-1], True] if len(times) else np.zeros(0, bool)
    frame = pd.DataFrame({"t": times[last_of_time], "atoms": np.cumsum(deltas)[last_of_time]})
    if groups is not None:
        groups = groups[order]
        for name in pd.unique(groups):
            frame[name] = np.cumsum(np.where(groups == name, deltas, 0))[last_of_time]
    if until is not None and (frame.empty or until > frame["t"].iloc[-1]):
        tail = frame.iloc[-1:].copy() if len(frame) else pd.DataFrame({"atoms": [0]})
        tail["t"] = until
        frame = pd.concat([frame, tail], ignore_index=True)
    frame.insert(1, "elapsed", frame["t"] - start)
    return frame.astype({c: "int64" for c in frame.columns if c not in ("t", "elapsed")})


def check_usage(allocations: pd.DataFrame, atoms: int, start: float = 0.0) -> pd.DataFrame:
    """The usage curve (see ``usage_curve``); raise ValueError naming the first moment more than
    ``atoms`` were held."""
    curve = usage_curve(allocations, start)
    over = curve[curve["atoms"] > atoms]
    if len(over):
        row = over.iloc[0]
        raise ValueError(f"{int(row['atoms'])} atoms held at t={row['t']:g}, the run has {atoms}")
    if len(curve) and (curve["atoms"] < 0).any():
        row = curve[curve["atoms"] < 0].iloc[0]
        raise ValueError(f"negative atoms in use at t={row['t']:g}: intervals end before they start")
    return curve
