"""The one controller loop, and what assembles it for each way of running.

``controller``: the loop (poll events, journal them, feed state, scheduler and sampler, apply the
decisions); ``feed``: the one order in which a record reaches what learns from it; ``assembly``: a
run's controller built from its spec (and replayed from a resumed run's records); ``backends``: the
local and SLURM executors, checked against the spec's resources; ``runner``: a real run (``hpcsched
run``, ``hpcsched.run``); ``simulate``: the simulator's runs on a virtual clock; ``interrupts``:
signals during a run; ``progress``: a run's progress lines.

May import: every part below it (executors, schedulers, samplers, workloads, analysis, trial, rundir,
spec, core). Never the CLI.
"""
