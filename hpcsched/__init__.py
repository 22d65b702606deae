"""hpcsched: deadline-aware hyperparameter search (HyperSched and ASHA) for SLURM clusters."""

from hpcsched.api import SearchResult, run
from hpcsched.trial import TrialContext, load_checkpoint

__version__ = "0.1.0"
__all__ = ["SearchResult", "TrialContext", "load_checkpoint", "run", "__version__"]
