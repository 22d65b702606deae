"""Finding the user's training function: ``path/to/file.py:function`` or ``module:function``."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Callable

from hpcsched.core.errors import UserError


def resolve_reference(reference: str, base_dir: Path) -> str:
    """Make a file reference absolute (relative paths are taken from the spec's directory)."""
    target, _, function = reference.rpartition(":")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_absolute():
            path = (base_dir / path).resolve()
        return f"{path}:{function}"
    return reference


def check_trainable(reference: str) -> None:
    """Check, without importing it, that ``reference`` names a function taking (config, ctx).

    Importing would run the user's module (torch and all) in the controller; reading its source
    finds a missing file, module or function and a wrong signature just the same.
    """
    target, _, name = reference.rpartition(":")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise UserError(f"trainable: no such file {str(path)!r} (from {reference!r})")
    else:
        try:
            spec = importlib.util.find_spec(target)
        except (ImportError, ValueError) as exc:
            raise UserError(f"trainable: cannot find module {target!r}: {exc}") from None
        if spec is None:
            raise UserError(f"trainable: cannot find module {target!r} (is it on PYTHONPATH?)")
        if not spec.origin or not spec.origin.endswith(".py"):
            return  # compiled or namespace module: checked when a trial imports it
        path = Path(spec.origin)
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise UserError(f"trainable: {str(path)!r} line {exc.lineno}: syntax error: {exc.msg}") from None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            _check_arguments(node.args, reference, f"{name}({ast.unparse(node.args)})")
            return
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) or \
                (isinstance(node, (ast.Import, ast.ImportFrom))
                 and any((a.asname or a.name) == name for a in node.names)):
            return  # defined by assignment or import: checked when a trial imports it
    raise UserError(f"trainable: {str(path)!r} has no function {name!r}")


def _check_arguments(args: ast.arguments, reference: str, shown: str) -> None:
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    required_keyword = sum(1 for d in args.kw_defaults if d is None)
    if (positional < 2 and args.vararg is None) or required > 2 or required_keyword:
        raise UserError(f"trainable: {reference!r} must take two arguments (config, ctx), its signature is {shown}")


def load_trainable(reference: str) -> Callable:
    """Import and return the function named by ``reference``; raise UserError naming the problem."""
    target, _, name = reference.rpartition(":")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise UserError(f"trainable: no such file {str(path)!r} (from {reference!r})")
        digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
        module_name = f"hpcsched_trainable_{path.stem}_{digest}"  # stable across processes, for pickling
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            sys.path.insert(0, str(path.parent))
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                sys.modules.pop(module_name, None)
                raise UserError(f"trainable: importing {str(path)!r} failed: {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(target)
        except Exception as exc:
            raise UserError(f"trainable: cannot import module {target!r}: {type(exc).__name__}: {exc}") from exc
    function = getattr(module, name, None)
    if function is None:
        raise UserError(f"trainable: {target!r} has no function {name!r}")
    check_signature(function, reference)
    return function


def check_signature(function: Callable, reference: str) -> None:
    """The trainable must accept (config, ctx)."""
    if not callable(function):
        raise UserError(f"trainable: {reference!r} is not callable (it is a {type(function).__name__}); "
                        f"name a function taking (config, ctx)")
    try:
        signature = inspect.signature(function)
        signature.bind(object(), object())
    except (TypeError, ValueError):
        raise UserError(f"trainable: {reference!r} must take two arguments (config, ctx), "
                        f"its signature is {name_signature(function)}") from None


def name_signature(function: Callable) -> str:
    try:
        return f"{function.__name__}{inspect.signature(function)}"
    except (TypeError, ValueError):
        return repr(function)
