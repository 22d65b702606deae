"""Importing a trainable as a trial would, in a child process (``hpcsched check``).

Reading the source (``trainables.check_trainable``) cannot see a module that raises on import, a
name bound to something that is not a function (``file.py:json`` after ``import json``), or a
signature built at run time. ``probe_trainable`` runs ``python -m hpcsched.trial.probe`` with a trial's
environment and working directory; the child imports the trainable with ``load_trainable`` (as
``run_trial`` does), checks that it is a callable taking ``(config, ctx)``, and writes what it found
to a file (the user's module may print anything). The controller never imports user code itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Mapping

from hpcsched.core.errors import UserError

PROBE_TIMEOUT_S = 120.0  # importing a trainable (torch and all, from a cold file system) takes seconds


def probe_trainable(reference: str, environ: Mapping[str, str], timeout: float = PROBE_TIMEOUT_S) -> None:
    """Import ``reference`` in a child process with ``environ``; UserError naming the cause when it fails."""
    with tempfile.TemporaryDirectory(prefix="hpcsched-probe-") as folder:
        found = Path(folder) / "found.json"
        try:
            proc = subprocess.run([sys.executable, "-m", "hpcsched.trial.probe", reference, str(found)],
                                  env=dict(environ), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise UserError(f"trainable: importing {reference!r} did not finish within {timeout:g} s (a trial would "
                            f"wait as long in its setup)") from None
        try:
            data = json.loads(found.read_text())
        except (OSError, ValueError):
            said = proc.stderr.decode(errors="replace").strip().splitlines()[-6:]
            raise UserError(f"trainable: importing {reference!r} ended the process (exit code {proc.returncode}) "
                            f"before it could be checked" + ("".join(f"\n    {line}" for line in said))) from None
    if data.get("error"):
        raise UserError(str(data["error"]))


def _own_line(exc: BaseException, reference: str) -> str:
    """The traceback line of ``exc`` in the trainable's own file ('' when none is in it)."""
    target = reference.rpartition(":")[0]
    own = str(Path(target).resolve()) if target.endswith(".py") else None
    every = list(traceback.extract_tb(exc.__traceback__))
    if own is None:  # a module: its frames are those outside the interpreter's import machinery and hpcsched
        here = str(Path(__file__).resolve().parent)
        frames = [f for f in every if not f.filename.startswith(("<frozen", here))]
    else:
        frames = [f for f in every if str(Path(f.filename).resolve()) == own]
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename}, line {last.lineno}: {last.line}" if last.line else f"{last.filename}, line {last.lineno}"


def _found(reference: str) -> dict[str, Any]:
    """What importing ``reference`` gives, as the child reports it: {} or {"error": ...}."""
    from hpcsched.trial.trainables import load_trainable

    try:
        load_trainable(reference)
    except UserError as exc:
        cause = exc.__cause__
        where = _own_line(cause, reference) if cause is not None else ""
        return {"error": str(exc) + (f"\n    at {where}" if where else "")}
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt raised by the module itself
        where = _own_line(exc, reference)
        return {"error": f"trainable: importing {reference!r} raised {type(exc).__name__}: {exc}"
                         + (f"\n    at {where}" if where else "")}
    return {}


def main(argv: list[str]) -> None:
    reference, out = argv
    Path(out).write_text(json.dumps(_found(reference)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # threads or atexit handlers the user's module started must not hold the check


if __name__ == "__main__":
    main(sys.argv[1:])
