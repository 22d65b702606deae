"""The command line: ``hpcsched simulate | run | check | status | logs | report | profile``.

``main``: every command's arguments and dispatch (``python -m hpcsched``, the ``hpcsched`` script);
``argtypes``: argparse types; ``meter``: the simulator's progress bar; ``status`` and ``logs``: what a
run directory shows; ``preflight``: ``hpcsched check``; ``profiler``: ``hpcsched profile``.

May import: every part below it. Nothing imports the CLI but ``hpcsched.__main__``.
"""
