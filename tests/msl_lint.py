"""An MSL lint: checks Metal Shading Language sources against rules of MSL that the CPU device's clang
cannot see, so that what passes here is what Apple's compiler and Metal's runtime accept.

Test-only: ``tests/msl_lint_plugin.py`` runs it on every source the test suite compiles. Each rule names
the section of the Metal Shading Language Specification (version 4, 2025) it comes from:

- ``address-space``: every pointer and reference type carries an address space (§4).
- ``kernel-attributes``: every kernel parameter has a binding; built-in inputs have the types of Table 5.8
  and match one another as §5.2.3.6 requires; buffer and threadgroup indices are 0..30 and unique (§5.2.1,
  Metal feature set tables); buffers are device or constant pointers or references, dynamic threadgroup
  memory a threadgroup pointer; ``max_total_threads_per_threadgroup`` is 1..1024.
- ``atomics``: the atomic type x operation x address space table of §6.15.4 (int and uint: everything, in
  device and threadgroup memory; bool: store, load, exchange, compare-exchange; float: those and add/sub,
  device memory only; ulong: min and max, device memory only; no other atomic type), memory_order_relaxed
  for every atomic operation and relaxed or seq_cst for atomic_thread_fence (§6.15.1).
- ``coherent-device``: a source that fences device memory at device scope (atomic_thread_fence with
  mem_device and thread_scope_device, the default) declares the device buffers of its kernels
  ``coherent(device)`` (§4.8): without it a fence makes nothing visible across threadgroups (device memory
  is coherent within a threadgroup, so threadgroup-scope fences need nothing).
- ``buffer-count``: at most 31 buffers per kernel (Metal feature set tables: buffer indices 0..30).
- ``argument-size``: the argument struct's size by MSL's layout rules (§2.2-2.3: sizes and alignments of
  scalars, vectors, packed vectors, arrays and structs) equals the bytes the host packs (``params``).
- ``language-version``: a source uses nothing newer than the MSL version it is compiled as, and a source
  that needs more than MSL 3.0 (the newest on macOS 13, the oldest macOS numba-metal supports) requests
  its version explicitly: Metal compiles an unversioned source with the newest version of the Mac's OS,
  so on an older macOS it would fail with an unrelated error.
- ``weak-cas-retry``: every ``atomic_compare_exchange_weak_explicit`` is inside a loop (in its condition or
  its body): MSL has only the weak compare-exchange, which may fail spuriously although the value equals
  the expected one (§6.15.4.4, as C++'s ``compare_exchange_weak``), so a single attempt may do nothing.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import re

RULES = {
    "address-space": "every pointer and reference carries an address space (MSL §4)",
    "kernel-attributes": "kernel parameter bindings and built-in input types (MSL §5.2.1, §5.2.3.6, Table 5.8)",
    "atomics": "atomic type x operation x address space, and memory orders (MSL §6.15)",
    "coherent-device": "kernels that fence device memory declare their device buffers coherent(device) (MSL §4.8)",
    "buffer-count": "at most 31 buffers, indices 0..30 (Metal feature set tables)",
    "argument-size": "the argument struct's MSL size equals the bytes the host packs (MSL §2.2-2.3)",
    "language-version": "features within the requested MSL version; versions above 3.0 requested explicitly",
    "weak-cas-retry": "a weak compare-exchange, which may fail spuriously, is retried in a loop (MSL §6.15.4.4)",
}

#: The MSL version an unversioned request gets on the oldest macOS numba-metal supports (macOS 13).
OLDEST_DEFAULT_VERSION = 300
#: What the CPU device compiles an unversioned request as.
CPU_DEFAULT_VERSION = 320

ADDRESS_SPACES = {"device", "constant", "thread", "threadgroup", "threadgroup_imageblock", "ray_data",
                  "object_data"}

_SCALARS = {"bool": 1, "char": 1, "uchar": 1, "int8_t": 1, "uint8_t": 1, "short": 2, "ushort": 2, "int16_t": 2,
            "uint16_t": 2, "half": 2, "bfloat": 2, "int": 4, "uint": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
            "long": 8, "ulong": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8, "ptrdiff_t": 8}
_VECTOR = re.compile(r"^(packed_)?(bool|char|uchar|short|ushort|int|uint|long|ulong|half|bfloat|float)([234])$")
_BUILTIN_TYPES = set(_SCALARS) | {f"{p}{t}{n}" for t in ("bool", "char", "uchar", "short", "ushort", "int", "uint",
                                                         "long", "ulong", "half", "bfloat", "float")
                                  for n in (2, 3, 4) for p in ("", "packed_")} | {
    "void", "auto", "atomic_int", "atomic_uint", "atomic_bool", "atomic_float", "atomic_ulong", "atomic", "vec",
    "simd_vote", "mem_flags", "memory_order", "thread_scope"}

_POSITIONAL = {"thread_position_in_grid", "threads_per_grid", "thread_position_in_threadgroup",
               "threads_per_threadgroup", "threadgroup_position_in_grid", "dispatch_threads_per_threadgroup",
               "threadgroups_per_grid", "grid_origin", "grid_size"}
_SIMD_INDICES = {"thread_index_in_simdgroup", "threads_per_simdgroup", "thread_execution_width",
                 "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup",
                 "dispatch_simdgroups_per_threadgroup", "quadgroup_index_in_threadgroup",
                 "quadgroups_per_threadgroup", "dispatch_quadgroups_per_threadgroup", "thread_index_in_quadgroup"}
_INDICES = _SIMD_INDICES | {"thread_index_in_threadgroup"}

# §6.15.4: operation -> {atomic type: address spaces}; MSL version of each atomic type (§2.6).
_INT_SPACES = {"device", "threadgroup"}
_ATOMIC_OPS = {
    **{op: {"int": _INT_SPACES, "uint": _INT_SPACES, "bool": _INT_SPACES, "float": {"device"}}
       for op in ("store", "load", "exchange", "compare_exchange_weak")},
    **{f"fetch_{op}": {"int": _INT_SPACES, "uint": _INT_SPACES} for op in ("and", "or", "xor", "min", "max")},
    **{f"fetch_{op}": {"int": _INT_SPACES, "uint": _INT_SPACES, "float": {"device"}} for op in ("add", "sub")},
    "max": {"ulong": {"device"}}, "min": {"ulong": {"device"}},
}
_ATOMIC_VERSION = {"int": 100, "uint": 100, "bool": 240, "ulong": 240, "float": 300}
_ATOMIC_TYPE_WORD = re.compile(r"atomic_(?!thread_fence)[a-z0-9]+(?<!_explicit)")

# Features and the MSL version that introduced them (MSL §1.5.4, §2.1, §2.6, §4.8, Tables 6.2, 6.4, 6.14,
# 6.15, §6.15.2-6.15.3; macOS versions): (version, what, words that use it, what must follow the word).
_VERSIONED = [
    (320, "atomic_thread_fence", ("atomic_thread_fence",), None),
    (320, "memory_order_seq_cst", ("memory_order_seq_cst",), None),
    (320, "thread_scope", ("thread_scope", "thread_scope_thread", "thread_scope_simdgroup", "thread_scope_threadgroup",
                           "thread_scope_device"), None),
    (320, "coherent(device)", ("coherent",), ("(", "device", ")")),
    (310, "nextafter", ("nextafter",), ("(",)),
    (310, "bfloat", ("bfloat", "bfloat2", "bfloat3", "bfloat4"), None),
    (300, "atomic_float", ("atomic_float",), None),
    (300, "atomic<float>", ("atomic",), ("<", "float", ">")),
    (240, "atomic_bool", ("atomic_bool",), None),
    (240, "atomic<bool>", ("atomic",), ("<", "bool", ">")),
    (240, "atomic_ulong", ("atomic_ulong",), None),
    (240, "atomic<ulong>", ("atomic",), ("<", "ulong", ">")),
    (240, "simd_shuffle_and_fill", ("simd_shuffle_and_fill_up", "simd_shuffle_and_fill_down"), ("(",)),
    (220, "long and ulong", ("long", "ulong", "long2", "long3", "long4", "ulong2", "ulong3", "ulong4"), None),
    (210, "SIMD-group reductions, scans and votes",
     ("simd_sum", "simd_product", "simd_min", "simd_max", "simd_and", "simd_or", "simd_xor", "simd_all", "simd_any",
      "simd_ballot", "simd_active_threads_mask", "simd_broadcast_first", "simd_is_first", "simd_shuffle_rotate_up",
      "simd_shuffle_rotate_down", "simd_prefix_inclusive_sum", "simd_prefix_exclusive_sum",
      "simd_prefix_inclusive_product", "simd_prefix_exclusive_product"), ("(",)),
    (210, "max3, min3, median3, fmax3, fmin3, mad24, mul24, reverse_bits",
     ("fmax3", "fmin3", "max3", "min3", "median3", "mad24", "mul24", "reverse_bits"), ("(",)),
]
_LONG_WORDS = {"long", "ulong", "int64_t", "uint64_t", "long2", "long3", "long4", "ulong2", "ulong3", "ulong4"}


@dataclasses.dataclass(frozen=True)
class Finding:
    """One broken rule, at a line and column of the MSL source."""

    rule: str
    line: int
    col: int
    message: str
    text: str = ""

    def __str__(self) -> str:
        where = f"kernel.metal:{self.line}:{self.col}" if self.line else "kernel.metal"
        shown = f"\n    {self.text.strip()}" if self.text.strip() else ""
        return f"[{self.rule}] {where}: {self.message}{shown}"


# ---------------------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------------------

# Line comments and preprocessor lines are dropped (nothing follows them on their line, so columns hold);
# block comments become spaces, keeping their newlines.
_LINE_NOISE = re.compile(r"//[^\n]*|^[ \t]*#[^\n]*", re.MULTILINE)
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_TOKEN = re.compile(r"""\s*([A-Za-z_]\w*|(?:\d|\.\d)(?:[\w.]|[eEpP][-+])*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'"""
                    r"|::|->|&&|\|\||[-+*/%&|^!=<>]=|\+\+|--|\S)")


class Source:
    """An MSL source as tokens (comments and preprocessor lines dropped). Lines are tokenized once per
    distinct text (generated sources share most of their lines), and token positions are computed only
    for the tokens a finding or a rule asks about."""

    _lines: dict[str, list[str]] = {}

    def __init__(self, text: str):
        self.text = text
        body = text
        if "/*" in body:
            body = _BLOCK_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), body)
        if "\\\n" in body:   # continued preprocessor lines
            body = re.sub(r"^([ \t]*#(?:[^\n\\]|\\.)*)", lambda m: re.sub(r"[^\n]", " ", m.group(0)), body,
                          flags=re.MULTILINE | re.DOTALL)
        self.body = body = _LINE_NOISE.sub("", body)
        cache = Source._lines
        if len(cache) > 200_000:
            cache.clear()
        self.words: list[str] = []
        self.line_ends: list[int] = []   # number of tokens up to the end of each line
        for line in body.split("\n"):
            toks = cache.get(line)
            if toks is None:
                toks = cache[line] = _TOKEN.findall(line)
            self.words += toks
            self.line_ends.append(len(self.words))
        self.wordset = set(self.words)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", body)]

    def first(self, w: str) -> int | None:
        return self.words.index(w) if w in self.wordset else None

    def occurrences(self, w: str):
        """Indices of every token equal to w."""
        if w not in self.wordset:
            return
        words, i = self.words, -1
        while True:
            try:
                i = words.index(w, i + 1)
            except ValueError:
                return
            yield i

    def kind(self, i: int) -> str:
        w = self.t(i)
        c = w[:1]
        if c.isalpha() or c == "_":
            return "ident"
        if c.isdigit() or (c == "." and len(w) > 1):
            return "number"
        return "literal" if c in "\"'" else "punct"

    def where(self, i: int) -> tuple[int, int, str]:
        """1-based line, column and the line's text of token i."""
        i = min(max(i, 0), max(len(self.words) - 1, 0))
        line = bisect.bisect_right(self.line_ends, i)
        first = self.line_ends[line - 1] if line else 0
        start = self.line_starts[min(line, len(self.line_starts) - 1)]
        end = self.body.find("\n", start)
        offsets = [m.start(1) for m in _TOKEN.finditer(self.body[start:end if end >= 0 else None])]
        col = offsets[i - first] + 1 if 0 <= i - first < len(offsets) else 1
        lines = self.text.split("\n")
        return line + 1, col, lines[line] if line < len(lines) else ""

    def token_at(self, pos: int) -> int:
        """The index of the token starting at or after body offset pos."""
        line = bisect.bisect_right(self.line_starts, pos) - 1
        first = self.line_ends[line - 1] if line else 0
        start = self.line_starts[line]
        end = self.body.find("\n", start)
        for k, m in enumerate(_TOKEN.finditer(self.body[start:end if end >= 0 else None])):
            if start + m.start(1) >= pos:
                return first + k
        return self.line_ends[line]

    def match(self, i: int) -> int | None:
        """The token closing the bracket opened at i."""
        pairs = {"(": ")", "[": "]", "{": "}"}
        o = self.t(i)
        if o not in pairs:
            return None
        c, depth, words = pairs[o], 0, self.words
        for j in range(i, len(words)):
            w = words[j]
            if w == o:
                depth += 1
            elif w == c:
                depth -= 1
                if depth == 0:
                    return j
        return None

    def t(self, i: int) -> str:
        return self.words[i] if 0 <= i < len(self.words) else ""

    def split(self, open_: int, close: int) -> list[tuple[int, int]]:
        """Top-level comma-separated token ranges inside a bracket pair."""
        out, depth, start = [], 0, open_ + 1
        for i in range(open_ + 1, close):
            s = self.t(i)
            if s in ("(", "[", "{", "<"):
                depth += 1
            elif s in (")", "]", "}", ">"):
                depth -= 1
            elif s == "," and depth == 0:
                out.append((start, i))
                start = i + 1
        if start < close:
            out.append((start, close))
        return out


# ---------------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------------

class _Linter:
    def __init__(self, source: str, language_version: int, params):
        self.src = Source(source)
        self.requested = language_version
        self.version = language_version or CPU_DEFAULT_VERSION
        self.params = params
        self.findings: list[Finding] = []
        self.types = self._type_names()
        self.kernels = self._kernels()

    def add(self, rule: str, i: int | None, message: str):
        if i is None:
            self.findings.append(Finding(rule, 0, 0, message))
        else:
            line, col, text = self.src.where(i)
            self.findings.append(Finding(rule, line, col, message, text))

    def _type_names(self) -> set[str]:
        s = self.src
        names = set(_BUILTIN_TYPES)
        for w in ("struct", "class", "union", "enum", "typename"):
            names.update(s.t(i + 1) for i in s.occurrences(w))
        names.update(s.t(i + 1) for i in s.occurrences("using") if s.t(i + 2) == "=")
        for i in s.occurrences("typedef"):
            j = i
            while j < len(s.words) and s.t(j) != ";":
                j += 1
            names.add(s.t(j - 1))
        return names

    # -- kernels ---------------------------------------------------------------------------------
    def _kernels(self):
        """[(name, name token, [(type tokens, name, attribute text, first token)])] for every kernel."""
        s, out = self.src, []
        for i in s.occurrences("kernel"):
            if s.t(i - 1) == "[" and s.t(i - 2) == "[" and s.t(i + 1) == "]" and s.t(i + 2) == "]":
                v = i + 3   # [[kernel]] void
            else:
                v = i + 1
            if s.t(v) != "void" or s.t(v + 2) != "(":
                continue
            close = s.match(v + 2)
            if close is None:
                continue
            params = []
            for a, b in s.split(v + 2, close):
                attr, end = "", b
                for j in range(a, b):
                    if s.t(j) == "[" and s.t(j + 1) == "[":
                        k = j + 2
                        while k < b and not (s.t(k) == "]" and s.t(k + 1) == "]"):
                            k += 1
                        attr, end = "".join(s.t(x) for x in range(j + 2, k)), j
                        break
                if end - a >= 2:
                    params.append(([s.t(x) for x in range(a, end - 1)], s.t(end - 1), attr, a))
            out.append((s.t(v + 1), v + 1, params))
        return out

    def kernel_attributes(self):
        for name, at, params in self.kernels:
            buffers, groups, builtins = {}, {}, {}
            for type_toks, pname, attr, first in params:
                type_text = " ".join(type_toks).replace(" *", "*").replace(" &", "&")
                m = re.fullmatch(r"(buffer|threadgroup)\((\d+)\)", attr)
                if m:
                    slot = int(m.group(2))
                    used = buffers if m.group(1) == "buffer" else groups
                    if slot > 30:
                        self.add("buffer-count" if m.group(1) == "buffer" else "kernel-attributes", first,
                                 f"[[{attr}]] on '{pname}': indices are 0..30")
                    if slot in used:
                        self.add("kernel-attributes", first, f"[[{attr}]] is used by '{used[slot]}' and '{pname}'")
                    used[slot] = pname
                    core = list(type_toks)
                    while core and core[-1] in ("const", "volatile", "__restrict", "__restrict__", "restrict"):
                        core.pop()
                    pointer = core and core[-1] in ("*", "&")
                    spaces = ADDRESS_SPACES & set(type_toks)
                    if m.group(1) == "buffer" and not (pointer and spaces <= {"device", "constant"} and spaces):
                        self.add("kernel-attributes", first, f"buffer '{pname}' is '{type_text}': a [[buffer(i)]] "
                                 "parameter is a device or constant pointer or reference")
                    if m.group(1) == "threadgroup" and not (core and core[-1] == "*"
                                                            and "threadgroup" in type_toks):
                        self.add("kernel-attributes", first, f"'{pname}' is '{type_text}': a [[threadgroup(i)]] "
                                 "parameter is a threadgroup pointer")
                elif attr in _POSITIONAL or attr in _INDICES:
                    allowed = {"ushort", "uint"} | ({"ushort2", "ushort3", "uint2", "uint3"} if attr in _POSITIONAL
                                                    else set())
                    if type_text not in allowed:
                        self.add("kernel-attributes", first, f"[[{attr}]] '{pname}' is '{type_text}'; Table 5.8 "
                                 f"allows {', '.join(sorted(allowed))}")
                    builtins[attr] = (type_text, first)
                else:
                    self.add("kernel-attributes", first, f"kernel parameter '{pname}' of '{name}' has no buffer, "
                             f"threadgroup or built-in input attribute" + (f" ([[{attr}]])" if attr else ""))
            if len(buffers) > 31:
                self.add("buffer-count", at, f"kernel '{name}' declares {len(buffers)} buffers; Metal binds at most 31")
            self._builtin_matching(name, builtins)

    def _builtin_matching(self, name, builtins):
        def width(t):
            return int(t[-1]) if t[-1].isdigit() else 1
        groups = [("thread_position_in_grid", "threads_per_grid"),
                  ("thread_position_in_threadgroup", "threads_per_threadgroup", "dispatch_threads_per_threadgroup")]
        for group in groups:
            declared = [(a, builtins[a]) for a in group if a in builtins]
            if len({t for _, (t, _) in declared}) > 1:
                self.add("kernel-attributes", declared[-1][1][1], f"kernel '{name}': the types of "
                         + ", ".join(f"[[{a}]] ({t})" for a, (t, _) in declared) + " need to match (§5.2.3.6)")
        positional = [(a, t, i) for a, (t, i) in builtins.items() if a in _POSITIONAL - {"grid_origin", "grid_size"}]
        if len({width(t) for _, t, _ in positional}) > 1:
            self.add("kernel-attributes", positional[-1][2], f"kernel '{name}': the vector widths of "
                     + ", ".join(f"[[{a}]] ({t})" for a, t, _ in positional) + " need to match (§5.2.3.6)")
        pos = builtins.get("thread_position_in_threadgroup")
        idx = builtins.get("thread_index_in_threadgroup")
        if pos and idx and pos[0].startswith("uint") and idx[0] != "uint":
            self.add("kernel-attributes", idx[1], f"kernel '{name}': [[thread_index_in_threadgroup]] needs to be uint "
                     "when [[thread_position_in_threadgroup]] is uint-typed (§5.2.3.6)")
        simd = [(a, t, i) for a, (t, i) in builtins.items() if a in _SIMD_INDICES]
        if len({t for _, t, _ in simd}) > 1:
            self.add("kernel-attributes", simd[-1][2], f"kernel '{name}': the types of "
                     + ", ".join(f"[[{a}]] ({t})" for a, t, _ in simd) + " need to match (§5.2.3.6)")
        m = re.search(r"\[\[\s*max_total_threads_per_threadgroup\s*\(\s*(\d+)\s*\)\s*\]\]", self.src.body)
        if m and not 1 <= int(m.group(1)) <= 1024:
            self.add("kernel-attributes", None, f"max_total_threads_per_threadgroup({m.group(1)}) is outside 1..1024")

    # -- address spaces --------------------------------------------------------------------------
    def _declarator_runs(self):
        """(token of '*' or '&', specifier tokens) for every '*' or '&' that is part of a type."""
        s, types = self.src, self.types
        qualifiers = {"const", "volatile", "__restrict", "restrict"}
        for i in sorted(list(s.occurrences("*")) + list(s.occurrences("&"))):
            if s.t(i - 1) == "operator":
                continue
            j = i - 1
            while s.t(j) in qualifiers:
                j -= 1
            prev = s.t(j)
            if prev == ">":
                depth, k = 0, j
                while k >= 0:
                    if s.t(k) == ">":
                        depth += 1
                    elif s.t(k) == "<":
                        depth -= 1
                        if depth == 0:
                            break
                    elif s.t(k) in (";", "{", "}"):
                        k = -1
                        break
                    k -= 1
                if k <= 0 or s.t(k - 1) not in types and s.t(k - 1) not in ("nm_arr", "nm_pair", "nm_range",
                                                                            "nm_range_iter"):
                    continue
            elif prev not in types and prev not in ("*", "&") and not (prev == ")" and s.t(j - 1) == "device"
                                                                       and s.t(j - 3) == "coherent"):
                continue
            nxt = s.t(i + 1)
            if s.kind(i + 1) in ("number", "literal") or nxt == "(":
                continue
            # The specifier run: back to a delimiter, or to the previous '*'/'&' of a multi-level type.
            run, k, angle = [], i - 1, 0
            while k >= 0:
                w = s.t(k)
                if w == ">":
                    angle += 1
                elif w == "<":
                    if angle == 0:
                        break
                    angle -= 1
                elif angle == 0 and (w in ("(", ",", ";", "{", "}", "=", "[", "]", ":", "?", "return")
                                     or (w in ("*", "&") and k != i)):
                    if w == "(" and s.t(k - 1) == "coherent":
                        run.append("coherent")
                        k -= 2
                        continue
                    break
                elif angle == 0 and w == ")" and s.t(k - 1) == "device" and s.t(k - 2) == "(":
                    run.append("device")
                    k -= 2
                    continue
                if angle == 0:
                    run.append(w)
                k -= 1
            yield i, run

    def address_spaces(self):
        for i, run in self._declarator_runs():
            if not ADDRESS_SPACES & set(run):
                kind = "pointer" if self.src.t(i) == "*" else "reference"
                self.add("address-space", i, f"{kind} type '{' '.join(reversed(run))}{self.src.t(i)}' has no address "
                         "space; write device, constant, threadgroup or thread")

    def coherent_device(self):
        if "atomic_thread_fence" not in self.src.wordset:
            return
        # Device memory is coherent within a threadgroup (§4.8): only fences of device scope (the default)
        # need coherent(device) memory.
        fences = [m for m in re.finditer(r"\batomic_thread_fence\s*\(([^;]*)\)", self.src.body)
                  if "mem_device" in m.group(1) and not re.search(r"thread_scope_(threadgroup|simdgroup|thread)\b",
                                                                   m.group(1))]
        if not fences:
            return
        for name, _, params in self.kernels:
            for type_toks, pname, attr, first in params:
                if not attr.startswith("buffer(") or "device" not in type_toks or "coherent" in type_toks:
                    continue
                if any(t.startswith("atomic") for t in type_toks):
                    continue
                line = self.src.where(first)[0]
                fence_line = self.src.body.count("\n", 0, fences[0].start()) + 1
                self.add("coherent-device", first, f"kernel '{name}' fences device memory (line {fence_line}) but "
                         f"its buffer '{pname}' is not coherent(device): the fence makes its writes visible only "
                         f"within the threadgroup (line {line})")

    # -- atomics ---------------------------------------------------------------------------------
    def _atomic_types(self):
        """(token, address space or None, element kind, declared name or None) for every atomic type written."""
        s = self.src
        for w in sorted(w for w in s.wordset if w.startswith("atomic")):
            if w == "atomic":
                kinds = ((i, s.t(i + 2), i + 3) for i in s.occurrences(w) if s.t(i + 1) == "<" and s.t(i + 3) == ">")
            elif _ATOMIC_TYPE_WORD.fullmatch(w):
                kinds = ((i, w[len("atomic_"):], i) for i in s.occurrences(w))
            else:
                continue
            for i, kind, last in kinds:
                j = i - 1
                while s.t(j) in ("volatile", "const"):
                    j -= 1
                space = s.t(j) if s.t(j) in ADDRESS_SPACES else None
                k = last + 1
                while s.t(k) in ("*", "&", "const", "volatile"):
                    k += 1
                yield i, space, kind, (s.t(k) if s.kind(k) == "ident" else None)

    def atomics(self):
        s = self.src
        if not any(w.startswith("atomic") for w in s.wordset):
            return
        declared = {}
        for i, space, kind, name in self._atomic_types():
            if kind not in _ATOMIC_VERSION:
                self.add("atomics", i, f"atomic_{kind} is not an MSL atomic type (int, uint, bool, float, ulong)")
            elif space in ("thread", "constant"):
                self.add("atomics", i, f"atomics live in device or threadgroup memory, not {space}")
            elif kind in ("float", "ulong") and space == "threadgroup":
                self.add("atomics", i, f"atomic_{kind} is supported only in device memory (§6.15.4)")
            if space and name:
                declared[name] = (space, kind)
        for w in sorted(w for w in s.wordset if w.startswith("atomic_") and w.endswith("_explicit")):
            op = w[len("atomic_"):-len("_explicit")]
            for at in s.occurrences(w):
                i = at + 1
                close = s.match(i) if s.t(i) == "(" else None
                if close is None:
                    continue
                args = s.split(i, close)
                for a, b in args:
                    order = "".join(s.t(x) for x in range(a, b))
                    if order.startswith("memory_order") and not order.endswith("memory_order_relaxed"):
                        self.add("atomics", at, f"{w} with '{order}': atomic operations take memory_order_relaxed "
                                 "only (§6.15.1)")
                if op not in _ATOMIC_OPS:
                    self.add("atomics", at, f"{w} is not an MSL atomic function (§6.15.4)")
                    continue
                if not args:
                    continue
                first = [s.t(x) for x in range(*args[0])]
                found = None
                for x, t in enumerate(first):   # a cast: (device [volatile] atomic_T*)
                    if t in ("device", "threadgroup") and x + 1 < len(first):
                        rest = [u for u in first[x + 1:] if u not in ("volatile", "const")]
                        if rest and _ATOMIC_TYPE_WORD.fullmatch(rest[0]):
                            found = (t, rest[0][len("atomic_"):])
                        elif rest[:2] == ["atomic", "<"] and len(rest) > 2:
                            found = (t, rest[2])
                        break
                if found is None:
                    names = [t for t in first if t[:1].isalpha() or t[:1] == "_"]
                    found = declared.get(names[-1]) if names else None
                if found is None:
                    continue
                space, kind = found
                allowed = _ATOMIC_OPS[op].get(kind)
                if allowed is None:
                    self.add("atomics", at, f"{w} is not defined for atomic_{kind} (§6.15.4)")
                elif space not in allowed:
                    self.add("atomics", at, f"{w} on atomic_{kind} is supported only in "
                             f"{' and '.join(sorted(allowed))} memory, not {space} (§6.15.4)")
        for at in s.occurrences("atomic_thread_fence"):
            close = s.match(at + 1) if s.t(at + 1) == "(" else None
            if close is None:
                continue
            args = ["".join(s.t(x) for x in range(a, b)) for a, b in s.split(at + 1, close)]
            if len(args) < 2 or not re.fullmatch(r"(memory_order::)?memory_order_(relaxed|seq_cst)", args[1]):
                self.add("atomics", at, "atomic_thread_fence takes (mem_flags, memory_order_relaxed or "
                         "memory_order_seq_cst[, thread_scope]) (§6.15.3)")
            elif len(args) > 2 and not re.fullmatch(r"(thread_scope::)?thread_scope_(thread|simdgroup|threadgroup|"
                                                    r"device)", args[2]):
                self.add("atomics", at, f"'{args[2]}' is not a thread_scope (§6.15.2)")

    def weak_compare_exchange(self):
        s = self.src
        for at in s.occurrences("atomic_compare_exchange_weak_explicit"):
            if not self._in_loop(at):
                self.add("weak-cas-retry", at, "atomic_compare_exchange_weak_explicit may fail spuriously "
                         "(§6.15.4.4): retry it in a loop while the value read equals the expected one")

    def _in_loop(self, i: int) -> bool:
        """Token i is in a loop's condition or braced body within its function."""
        s, depth = self.src, 0
        for j in range(i - 1, -1, -1):
            w = s.t(j)
            if w in (")", "}", "]"):
                depth += 1
            elif w in ("(", "{", "[") and depth:
                depth -= 1
            elif w == "(" and s.t(j - 1) in ("while", "for"):
                return True
            elif w == "{":
                if s.t(j - 1) == "do":
                    return True
                opener = self._opening(j - 1) if s.t(j - 1) == ")" else None
                head = s.t(opener - 1) if opener is not None else ""
                if head in ("while", "for"):
                    return True
                if opener is not None and head not in ("if", "switch"):
                    return False   # a function's body
        return False

    def _opening(self, close: int) -> int | None:
        """The token opening the parenthesis closed at `close`."""
        s, depth = self.src, 0
        for j in range(close, -1, -1):
            w = s.t(j)
            if w == ")":
                depth += 1
            elif w == "(":
                depth -= 1
                if depth == 0:
                    return j
        return None

    # -- versions --------------------------------------------------------------------------------
    def _uses(self, words, follow) -> int | None:
        """The first token that is one of `words` followed by the tokens `follow`, or None."""
        s = self.src
        best = None
        for w in words:
            i = s.first(w)
            if i is None:
                continue
            if follow is None:
                best = i if best is None else min(best, i)
                continue
            for j in s.occurrences(w):
                if all(s.t(j + 1 + k) == f for k, f in enumerate(follow)):
                    best = j if best is None else min(best, j)
                    break
        return best

    def language_version(self):
        s = self.src
        needed = []
        for version, what, words, follow in _VERSIONED:
            i = self._uses(words, follow)
            if i is not None:
                needed.append((version, what, i))
        buffers = ("device", "constant")
        for i in (i for w in _LONG_WORDS & s.wordset for i in s.occurrences(w)):   # §2.8: from MSL 2.3
            if s.t(i + 1) in ("*", "&") and (s.t(i - 1) in buffers or (s.t(i - 1) == "const" and s.t(i - 2) in buffers)):
                needed.append((230, "64-bit integers in buffers", i))
                break
        for version, what, i in needed:
            if version > self.version:
                self.add("language-version", i, f"{what} needs MSL {version / 100:.1f}; this source is compiled as "
                         f"MSL {self.version / 100:.1f}")
        top = max(needed, default=None)
        if self.requested == 0 and top and top[0] > OLDEST_DEFAULT_VERSION:
            self.add("language-version", top[2], f"{top[1]} needs MSL {top[0] / 100:.1f} but the source is compiled "
                     f"without a language version: request language_version={top[0]} (Metal compiles an unversioned "
                     f"source as the newest MSL of the Mac's OS: MSL 3.0 on macOS 13)")

    # -- argument struct -------------------------------------------------------------------------
    def argument_size(self):
        if not self.params:
            return
        for p in self.params:
            if p.kind != 2:  # PARAM_ARGUMENT_BLOCK
                continue
            name = re.sub(r"\b(constant|const|device)\b|[&*]", "", p.type).strip()
            size = self.struct_size(name)
            if size is None:
                self.add("argument-size", None, f"the argument struct '{name}' is not a plain struct of this source "
                         "whose MSL size the lint can compute")
            elif size != p.size:
                i = self.src.token_at(self.src.body.find(f"struct {name}"))
                self.add("argument-size", i, f"struct {name} is {size} bytes in MSL but the host packs {p.size}")

    def layout(self, type_name: str, seen=()) -> tuple[int, int] | None:
        """(size, alignment) of a type by MSL's layout rules (§2.2-2.3), or None if unknown."""
        if type_name in _SCALARS:
            return _SCALARS[type_name], _SCALARS[type_name]
        m = _VECTOR.match(type_name)
        if m:
            elem = _SCALARS[m.group(2)]
            n = int(m.group(3))
            if m.group(1):
                return elem * n, elem
            size = elem * (4 if n == 3 else n)
            return size, size
        if type_name in seen:
            return None
        members = self._struct_members(type_name)
        if members is None:
            return None
        size = align = 1
        size = 0
        for member_type, count in members:
            if member_type == "*":
                ms, ma = 8, 8
            else:
                lay = self.layout(member_type, seen + (type_name,))
                if lay is None:
                    return None
                ms, ma = lay
            size = (size + ma - 1) // ma * ma + ms * count
            align = max(align, ma)
        return (size + align - 1) // align * align, align

    def struct_size(self, name: str) -> int | None:
        lay = self.layout(name)
        return lay[0] if lay else None

    def _struct_members(self, name: str):
        m = re.search(r"\bstruct\s+" + re.escape(name) + r"\s*\{", self.src.body)
        if not m:
            return None
        depth, j = 1, m.end()
        body = self.src.body
        while j < len(body) and depth:
            depth += {"{": 1, "}": -1}.get(body[j], 0)
            j += 1
        members = []
        for decl in body[m.end():j - 1].split(";"):
            decl = re.sub(r"//[^\n]*|\[\[.*?\]\]", "", decl).strip()
            if not decl:
                continue
            dm = re.fullmatch(r"(?:(?:const|volatile)\s+)*(.*?)\s*(\*?)\s*(\w+)\s*((?:\[\s*\d+\s*\])*)", decl, re.DOTALL)
            if not dm or "(" in decl:
                return None
            count = 1
            for n in re.findall(r"\d+", dm.group(4)):
                count *= int(n)
            base = dm.group(1).split()
            members.append(("*" if dm.group(2) else base[-1] if base else "", count))
        return members

    def run(self):
        self.kernel_attributes()
        self.address_spaces()
        self.atomics()
        self.weak_compare_exchange()
        self.coherent_device()
        self.language_version()
        self.argument_size()
        return self.findings


_CACHE: dict[str, list[Finding]] = {}


def lint(source: str, language_version: int = 0, params=None) -> list[Finding]:
    """The findings of every rule on an MSL source compiled as `language_version` (0: the device default),
    with the kernel's parameter layout `params` (runtime.KernelParam, or None)."""
    key = hashlib.sha256(repr((language_version, [tuple(p) for p in params] if params else None)).encode()
                         + b"\0" + source.encode()).hexdigest()
    if key not in _CACHE:
        _CACHE[key] = _Linter(source, language_version, params).run()
    return _CACHE[key]
