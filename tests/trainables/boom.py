"""A trainable that cannot work: its module raises on import (as a missing CUDA library or a typo
at module level does), though its source defines ``train`` with the right signature."""

import json  # noqa: F401 - ``boom.py:json`` names a module, not a function

raise RuntimeError("boom at import")


def train(config, ctx):
    pass
