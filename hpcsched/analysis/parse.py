"""Fast parsing of a journal (``events.jsonl``) into column tables.

``reported`` lines are most of a journal (one per step of every trial), so those written as
``records.to_json`` + ``json.dumps(separators=(",", ":"))`` writes them are parsed together by
pandas' C CSV reader after one byte substitution; every other line goes through ``json`` and
the record classes, as ``journal.read_journal`` does. When the fast path cannot vouch for every
such line, they all take the slow path, so the result is always what ``read_journal`` gives
(a Reported record in any other layout lands in the reports too). Torn last line: skipped; a
bad line elsewhere: RunDirError naming it.
"""

from __future__ import annotations

import dataclasses
import io
import json
from dataclasses import dataclass
from itertools import compress, repeat
from pathlib import Path

import numpy as np
import pandas as pd

from hpcsched.core.errors import RunDirError
from hpcsched.core.records import RECORD_TYPES, Record, Reported, from_json

# how records.to_json + json.dumps(separators=(",", ":")) begin a Reported record
_REPORT_PREFIX = b'{"kind":"reported","t":'
_DTYPES = {"float": "float64", "int": "int64", "str": "str"}


@dataclass(frozen=True)
class JournalTable:
    """A parsed journal.

    ``reports``: one row per Reported record, columns seq (line number from 0) and the
    record's fields (t, trial, step, score, checkpoint), in journal order. ``records``: every
    other record as (seq, record), in order.
    ``lines``: lines read; ``torn_tail``: a torn last line was skipped.
    """

    path: Path
    reports: pd.DataFrame
    records: tuple[tuple[int, Record], ...]
    lines: int
    torn_tail: bool


def read_bytes(path: Path) -> bytes:
    """The journal's bytes; RunDirError naming the path when it cannot be read."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise RunDirError(f"{path}: no journal here") from None
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read the journal: {exc.strerror or exc}") from None


def parse_journal(path: Path) -> JournalTable:
    """Parse a journal file into a JournalTable (see the module docstring for the rules)."""
    path = Path(path)
    data = read_bytes(path)
    lines = data.split(b"\n")
    torn = False
    if not data.endswith(b"\n") and lines[-1].strip():
        try:
            from_json(json.loads(lines[-1]))
        except (ValueError, UnicodeDecodeError):
            lines[-1] = b""
            torn = True
    is_report = np.fromiter(map(bytes.startswith, lines, repeat(_REPORT_PREFIX)), dtype=bool, count=len(lines))
    report_seq = np.flatnonzero(is_report)
    report_lines = list(compress(lines, is_report))
    reports = _fast_reports(report_lines)
    if reports is None:
        reports = _reports_frame([_parse_line(path, raw, int(seq)) for raw, seq in zip(report_lines, report_seq)])
    reports.insert(0, "seq", report_seq.astype(np.int64))
    other_seq = [int(i) for i in np.flatnonzero(~is_report) if lines[i].strip()]
    others = list(zip(other_seq, _parse_records(path, [lines[i] for i in other_seq], other_seq)))
    stray = [(seq, r) for seq, r in others if isinstance(r, Reported)]  # written in another layout
    if stray:
        extra = _reports_frame([r for _, r in stray])
        extra.insert(0, "seq", np.array([seq for seq, _ in stray], dtype=np.int64))
        reports = pd.concat([reports, extra], ignore_index=True).sort_values("seq", kind="stable")
        reports = reports.reset_index(drop=True)
        others = [(seq, r) for seq, r in others if not isinstance(r, Reported)]
    return JournalTable(path, reports, tuple(others), len(report_seq) + len(other_seq), torn)


def _parse_records(path: Path, raws: list[bytes], seqs: list[int]) -> list[Record]:
    """Records of the given lines: all at once through json, line by line when that fails."""
    try:
        objects = json.loads(b"[" + b",".join(raws) + b"]")
    except (ValueError, UnicodeDecodeError):
        objects = None
    if objects is None or len(objects) != len(raws):
        return [_parse_line(path, raw, seq) for raw, seq in zip(raws, seqs)]
    builders = _record_builders()
    records = []
    for data, raw, seq in zip(objects, raws, seqs):
        try:
            cls, tuples = builders[data.pop("kind")]
            for name in tuples:
                if type(data.get(name)) is list:
                    data[name] = tuple(data[name])
            records.append(cls(**data))
        except (KeyError, TypeError, ValueError, AttributeError):
            # unknown fields (from_json drops them) or a bad line (from_json names the problem)
            records.append(_parse_line(path, raw, seq))
    return records


def _record_builders() -> dict[str, tuple[type, tuple[str, ...]]]:
    """kind -> (record class, its fields stored as tuples), as records.from_json builds them."""
    builders = {}
    for kind, cls in RECORD_TYPES.items():
        fields = [f for f in dataclasses.fields(cls) if f.name != "kind"]
        builders[kind] = (cls, tuple(f.name for f in fields if str(f.type).startswith("tuple")))
    return builders


def _parse_line(path: Path, raw: bytes, seq: int) -> Record:
    try:
        return from_json(json.loads(raw))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: line {seq + 1} is corrupted ({exc}); "
                          f"the journal cannot be replayed past it") from None


def report_fields() -> list[tuple[str, str, object]]:
    """(name, dtype, default) of Reported's fields, in the order to_json writes them."""
    out = []
    for f in dataclasses.fields(Reported):
        if f.name != "kind":
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()  # metrics: {} (shared by the rows; frames never change it)
            else:
                default = None
            out.append((f.name, _DTYPES.get(str(f.type), "object"), default))
    return out


def _empty_reports() -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series(dtype=dtype if dtype != "object" else object)
                         for name, dtype, _ in report_fields()})


def _fast_reports(lines: list[bytes]) -> pd.DataFrame | None:
    """Reported lines through the CSV reader, or None when any line is not in the layout of the first
    (keys in one order, the values' text free of quotes, commas and escapes)."""
    n = len(lines)
    if n == 0:
        return _empty_reports()
    fields = {name: (dtype, default) for name, dtype, default in report_fields()}
    try:
        keys = [k for k in json.loads(lines[0]) if k != "kind"]
    except (ValueError, UnicodeDecodeError):
        return None
    if keys[:1] != ["t"] or any(k not in fields or fields[k][0] == "object" for k in keys):
        return None
    width = 2 + 2 * len(keys)  # "kind", "reported", then key, value per field
    blob = b"\n".join(lines)
    if b"\\" in blob or blob.count(b"}") != n or blob.count(b"}\n") != n - 1 or not blob.endswith(b"}"):
        return None  # not exactly one closing brace per line, at its end
    blob = blob.translate(None, b"}").replace(b'":', b'",')
    if blob.count(b",") != (width - 1) * n:
        return None
    if any(blob.count(b',"' + k.encode() + b'",') != n for k in keys[1:]):
        return None
    options = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    positions = [3 + 2 * i for i in range(len(keys))]
    try:
        frame = pd.read_csv(io.BytesIO(blob), header=None, names=list(range(width)), usecols=positions,
                            dtype={p: str for p, k in zip(positions, keys) if fields[k][0] == "str"},
                            keep_default_na=False, skip_blank_lines=False, engine="c", **options)
    except (ValueError, pd.errors.ParserError):
        return None
    if len(frame) != n:
        return None
    frame.columns = keys
    for k in keys:
        dtype = fields[k][0]
        if dtype == "float64" and not pd.api.types.is_numeric_dtype(frame[k]) \
                or dtype == "int64" and not pd.api.types.is_integer_dtype(frame[k]):
            return None
    out = pd.DataFrame({name: (frame[name].astype(dtype) if name in frame.columns
                               else pd.Series([default] * n, dtype=dtype))
                        for name, (dtype, default) in fields.items()})
    return out


def _reports_frame(records: list[Record]) -> pd.DataFrame:
    """The reports frame of Reported records parsed one by one."""
    fields = report_fields()
    if not records:
        return _empty_reports()
    return pd.DataFrame({name: pd.Series([getattr(r, name) for r in records],
                                         dtype=dtype if dtype != "object" else object)
                         for name, dtype, _ in fields})
