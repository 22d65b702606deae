"""Errors that reach the user: each names what is wrong; the CLI turns them into exit code 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user (spec, command line, run directory). Exit code 2."""


class SpecError(UserError):
    """One or more problems in an experiment spec, each naming the field path and value."""

    def __init__(self, problems: list[str], source: str = "spec"):
        self.problems = list(problems)
        self.source = source
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s):\n{lines}")


class RunDirError(UserError):
    """A run directory that cannot be used as asked."""



def shown(value: object) -> str:
    """``repr(value)`` cut short for an error message: bounded work and length, whatever the value."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 3, 80, 80
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 8
    return short.repr(value)
