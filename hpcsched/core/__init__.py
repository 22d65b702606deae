"""The vocabulary every part shares, below all of them.

Errors (``errors``), the score mode (``mode``: the one "is a better than b"), the search space
(``space``), scaling functions (``scaling``), durations (``durations``: ``90s``, ``2h``), the journal's
record types (``records``: what the policies observe and the journal holds), how a launch ends
(``outcomes``), where a trial waits for a verdict (``decision_steps``), the run's state replayed from
records (``state``: trial statuses, the views policies read; ``atoms``: the atom pool; ``failures``:
what goes wrong and failure streaks), the injected clock (``clock``) and the package's version
(``version``).

May import: nothing of hpcsched outside ``core``.
"""
