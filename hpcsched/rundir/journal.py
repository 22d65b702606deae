"""The append-only journal of a run (``events.jsonl``): one JSON record per line.

Writers append under a file lock and flush each line; readers tolerate a torn last line
(a writer killed mid-line) but reject, naming its line, a corrupted line in the middle: one that
is no record (garbage, a field of the wrong type, nested too deep) or one that cannot follow the
lines before it (a trial never created, an atom not free), as a replay into a ``RunState`` finds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout

from hpcsched.core.errors import RunDirError
from hpcsched.core.records import JOURNAL_VERSION, Record, RunStarted, from_json, to_json
from hpcsched.core.state import RunState


class Journal(Protocol):
    def append(self, record: Record) -> None: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


class ListJournal:
    """Keeps records in memory (tests, simulations without an event log)."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def append(self, record: Record) -> None:
        self.records.append(record)

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


class NullJournal:
    def append(self, record: Record) -> None:
        pass

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


class JsonlJournal:
    """Appends records to a JSONL file.

    ``durable=True`` (real runs): the writer holds ``<path>.lock`` for as long as it is open (a
    second controller on the same run directory is refused); every record is written through
    at once (a killed controller loses at most the line it was writing) and ``sync`` fsyncs
    what was written since the last call (the controller calls it once per loop turn).
    ``durable=False`` (simulations): buffered writes, flushed on close.
    """

    def __init__(self, path: Path, durable: bool = True):
        self.path = Path(path)
        self.durable = durable
        self._lock = None
        self._dirty = False
        if durable:
            self._lock = FileLock(str(self.path) + ".lock", timeout=0)
            try:
                self._lock.acquire()
            except Timeout:
                raise RunDirError(f"{self.path.parent}: another controller is writing this run "
                                  f"({self.path.name}.lock is held); stop it before starting or resuming") from None
            self._repair_torn_tail()
        # durable: unbuffered bytes, so a failed write (a full disk) can be cut back to the last whole line
        self._file: Any = open(self.path, "ab", buffering=0) if durable else \
            open(self.path, "a", encoding="utf-8", buffering=1 << 16)

    def _repair_torn_tail(self) -> None:
        """Cut a torn last line left by a killed writer, so the next record starts on its own line."""
        if not self.path.exists():
            return
        with open(self.path, "rb+") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size == 0:
                return
            f.seek(max(0, size - 65536))
            tail = f.read()
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n")
            f.truncate(size - len(tail) + cut + 1 if cut >= 0 else (0 if size <= 65536 else size))

    def append(self, record: Record) -> None:
        line = json.dumps(to_json(record), separators=(",", ":"), allow_nan=False) + "\n"
        if not self.durable:
            self._file.write(line)
            return
        data = line.encode("utf-8")
        start = os.fstat(self._file.fileno()).st_size
        try:
            written = 0
            while written < len(data):
                written += self._file.write(data[written:]) or 0
        except OSError:
            os.ftruncate(self._file.fileno(), start)  # no half record: the journal stays replayable
            raise
        self._dirty = True

    def sync(self) -> None:
        """Make what was appended durable (fsync), once for all records since the last call."""
        if self._dirty and not self._file.closed:
            os.fsync(self._file.fileno())
            self._dirty = False

    def close(self) -> None:
        if not self._file.closed:
            self.sync()
            self._file.close()
        if self._lock is not None and self._lock.is_locked:
            self._lock.release()


def read_journal(path: Path) -> list[Record]:
    """All records of a journal; a torn last line is skipped, a bad line elsewhere (one that is no
    record, or one a replay of the lines before it cannot take) is a RunDirError naming its line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RunDirError(f"{path}: no journal here") from None
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read the journal: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    torn_tail = not data.endswith(b"\n")
    records: list[Record] = []
    numbers: list[int] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = number == len(lines)
        try:
            records.append(from_json(json.loads(raw)))
            numbers.append(number)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            if is_last and torn_tail:
                break
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise RunDirError(f"{path}: line {number} is corrupted ({why}); "
                              f"the journal cannot be replayed past it") from None
    started = next((r for r in records if isinstance(r, RunStarted)), None)
    if started is not None and started.version > JOURNAL_VERSION:
        raise RunDirError(f"{path}: written by a newer hpcsched (journal version {started.version}; this one "
                          f"reads up to {JOURNAL_VERSION}); upgrade hpcsched to read it")
    _check_replay(path, records, numbers, started)
    return records


def _check_replay(path: Path, records: list[Record], numbers: list[int], started: RunStarted | None) -> None:
    """RunDirError naming the first line that a replay of the lines before it cannot take."""
    state = RunState(started.mode if started is not None else "max")
    for number, record in zip(numbers, records):
        try:
            state.apply(record)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise RunDirError(f"{path}: line {number} is corrupted (it cannot follow the lines before it: "
                              f"{exc}); the journal cannot be replayed past it") from None
