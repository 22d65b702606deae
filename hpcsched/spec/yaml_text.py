"""YAML as ML users write it: ``1e-3`` is a number, a key is given once, nesting is bounded.

PyYAML resolves plain scalars by YAML 1.1, whose floats need a dot: ``1e-3`` is read as the
string ``"1e-3"`` (``1.0e-3`` as a float). YAML 1.2, and every hyperparameter written in a paper
or a config, read it as 0.001. PyYAML also keeps the last of two equal keys (``deadline:`` twice,
``{eta: 2, eta: 3}``) without a word, and composes nested nodes by recursion (``deep: [[[...``
3,000 deep ended in a RecursionError). Every YAML that hpcsched reads from a user (specs,
``--config`` values, profile files) goes through ``load_yaml``, which refuses both with the place.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

MAX_DEPTH = 100  # levels of nesting any YAML from a user may have (a spec has about 5)

# YAML 1.2's float forms that YAML 1.1 lacks: digits with an exponent and no dot (1e-3, 5E+4)
_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$")
_MERGE = "tag:yaml.org,2002:merge"


class YAMLPlaceError(yaml.YAMLError):
    """A document PyYAML would read, refused by hpcsched, with its place (1-based line and column)."""

    def __init__(self, problem: str, mark: Any = None):
        self.problem = problem
        self.line = mark.line + 1 if mark is not None else None
        self.column = mark.column + 1 if mark is not None else None
        place = f"line {self.line}, column {self.column}: " if mark is not None else ""
        super().__init__(place + problem)


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-3``-style plain scalars as floats, refuses a key given twice in one
    mapping and nesting deeper than MAX_DEPTH."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YAMLPlaceError(f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue  # merged keys may be overridden: that is what a merge is for
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.setdefault(key, key_node.start_mark)
                except TypeError:
                    continue  # an unhashable key: the constructor refuses it itself
                if seen is not key_node.start_mark:
                    raise YAMLPlaceError(f"duplicate key {key!r} (first at line {seen.line + 1}); "
                                         f"give each key once", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


# add_implicit_resolver copies the resolvers onto _Loader first: yaml.SafeLoader is left as it is
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def load_yaml(text: str) -> Any:
    """Parse ``text`` like ``yaml.safe_load``, with ``1e-3`` a float; raises yaml.YAMLError (a key given
    twice in a mapping, or nesting deeper than MAX_DEPTH: YAMLPlaceError naming the line and column)."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:  # merge keys chained through aliases: flattened by recursion
        raise YAMLPlaceError(f"nested more than {MAX_DEPTH} levels deep (through aliases or merge keys)") from None
