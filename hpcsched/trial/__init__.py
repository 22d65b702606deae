"""The trial side: what runs inside a trial's process.

``context``: the trainable's API (``TrialContext``, ``load_checkpoint``) and ``run_trial``, which a
launch runs; ``trainables``: resolving ``file.py:function`` / ``module:function``; ``replay``: the
replay trainable (``hpcsched.trial.replay:train``); ``probe``: ``hpcsched check``'s import of a
trainable as a trial would (``python -m hpcsched.trial.probe``).

May import: ``core``, ``rundir`` (the files a trial writes) and ``workloads`` (the curves the replay
trainable follows). Never the loop, an executor, a policy or the CLI.
"""

from hpcsched.trial.context import TrialContext, load_checkpoint

__all__ = ["TrialContext", "load_checkpoint"]
