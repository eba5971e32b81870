"""Reading a Numba signature string from a scanned file, without evaluating it.

Numba turns ``"float32(float32[:])"`` into types by ``eval`` with its type names in scope, so a
signature string is code: ``"__import__('os').system(...) or void()"`` runs a command. ``scan``
promises to run nothing of the files it reads, so it parses the string with :mod:`ast` and builds
the types itself from a small grammar:

    signature := type "(" [type ("," type)*] ")" | "(" [type ("," type)*] ")"
    type      := NAME | NAME "[" dim ("," dim)* "]"
    dim       := ":" | "::1"

where NAME is a public name of :mod:`numba.types` whose value is a type instance (``float32``,
``int64``, ``void``...). Anything else (attributes, other calls, operators, constants, keywords) is
refused with :class:`SignatureError`, before any of it is looked up.
"""

from __future__ import annotations

import ast

from numba import types

#: Longer signature strings are refused unread: no kernel needs more, and ``ast`` recurses on depth.
MAX_LENGTH = 2000

GRAMMAR = ("Numba type names (float32, int64, void...), array subscripts such as [:] and [:, ::1], and a "
           "call or tuple listing argument types")


class SignatureError(ValueError):
    """The string is not a signature ``scan`` reads (see :data:`GRAMMAR`)."""


def parse(text: str):
    """The Numba signature (or tuple of argument types) that ``text`` spells."""
    if len(text) > MAX_LENGTH:
        raise SignatureError(f"longer than {MAX_LENGTH} characters")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise SignatureError(f"not a Python expression ({type(e).__name__})") from None
    try:
        if isinstance(node, ast.Tuple):
            return tuple(_type(e) for e in node.elts)
        if isinstance(node, ast.Call):
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                raise SignatureError("keyword or starred arguments")
            return _type(node.func)(*(_type(a) for a in node.args))
    except (TypeError, ValueError, KeyError, NotImplementedError) as e:
        if isinstance(e, SignatureError):
            raise
        raise SignatureError(f"Numba refuses these types: {e}") from None
    raise SignatureError(f"a signature is a call such as 'void(float32[:])' or a tuple of types; got "
                         f"{type(node).__name__}")


def _type(node: ast.AST):
    """A type: a name, or a name subscripted with array dimensions (``float32[:, ::1]``)."""
    if isinstance(node, ast.Subscript):
        dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not dims or not all(_is_dimension(d) for d in dims):
            raise SignatureError("an array subscript takes only ':' or '::1' per dimension")
        spec = [slice(None, None, 1 if d.step is not None else None) for d in dims]
        return _name(node.value)[tuple(spec) if isinstance(node.slice, ast.Tuple) else spec[0]]
    return _name(node)


def _name(node: ast.AST):
    if not isinstance(node, ast.Name):
        raise SignatureError(f"{type(node).__name__} is not allowed: only {GRAMMAR}")
    value = None if node.id.startswith("_") else vars(types).get(node.id)
    if not isinstance(value, types.Type):
        raise SignatureError(f"{node.id!r} is not a Numba type name")
    return value


def _is_dimension(node: ast.AST) -> bool:
    return (isinstance(node, ast.Slice) and node.lower is None and node.upper is None
            and (node.step is None or (isinstance(node.step, ast.Constant) and type(node.step.value) is int
                                       and node.step.value == 1)))
