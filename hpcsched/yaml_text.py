"""YAML as ML users write it: ``1e-3`` is a number.

PyYAML resolves plain scalars by YAML 1.1, whose floats need a dot: ``1e-3`` is read as the
string ``"1e-3"`` (``1.0e-3`` as a float). YAML 1.2, and every hyperparameter written in a paper
or a config, read it as 0.001. Every YAML that hpcsched reads from a user (specs, ``--config``
values, profile files) goes through ``load_yaml``.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

# YAML 1.2's float forms that YAML 1.1 lacks: digits with an exponent and no dot (1e-3, 5E+4)
_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-3``-style plain scalars as floats."""


# add_implicit_resolver copies the resolvers onto _Loader first: yaml.SafeLoader is left as it is
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def load_yaml(text: str) -> Any:
    """Parse ``text`` like ``yaml.safe_load``, with ``1e-3`` a float; raises yaml.YAMLError."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
