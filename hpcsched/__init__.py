"""hpcsched: deadline-aware hyperparameter search (HyperSched and ASHA) for SLURM clusters."""

__version__ = "0.1.0"
