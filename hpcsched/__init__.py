"""hpcsched: deadline-aware hyperparameter search (HyperSched and ASHA) for SLURM clusters."""

from hpcsched.api import SearchResult, run
from hpcsched.core.version import __version__
from hpcsched.trial import TrialContext, load_checkpoint

__all__ = ["SearchResult", "TrialContext", "load_checkpoint", "run", "__version__"]
