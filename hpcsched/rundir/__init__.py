"""Every file format on shared storage, each with its one writer and reader.

``paths``: the run directory and ``TrialPaths`` (the one spelling of every trial file); ``journal``:
the JSONL journal; ``scores``: a trial's ``scores.jsonl``; ``verdict``: the verdict file a trial waits
for at a decision step; ``result``: ``result.json``; ``event_files``: TensorBoard event files of a
trial's reports; ``sim_layout``: the simulator's output folder.

May import: ``core`` and ``spec`` (result.json names the spec's fields).
"""
