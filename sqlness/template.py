"""A small, safe renderer for the minijinja subset used by ``-- SQLNESS TEMPLATE`` statements.

Case files generate repetitive SQL (``INSERT ... VALUES`` with hundreds of rows, many similar
statements) from a template and a JSON context. Jinja2 would be a new dependency and evaluates
far more than needed; this renderer parses the template into a tree and interprets only a fixed
grammar, so a case file can never run arbitrary Python.

Supported:

* ``{{ expr }}`` output, ``{# comment #}``, whitespace control with ``{%-``/``-%}``/``{{-``/``-}}``;
* ``{% for x in expr %}`` (also ``for k, v in ...``) with ``{% else %}`` and ``loop.index``,
  ``loop.index0``, ``loop.revindex``, ``loop.revindex0``, ``loop.first``, ``loop.last``,
  ``loop.length``; ``{% if %}``/``{% elif %}``/``{% else %}``; ``{% set name = expr %}``;
* expressions: literals (numbers, strings, ``true``/``false``/``none``, lists), names,
  ``a.b``, ``a[i]``, ``range(n)``/``range(a, b[, step])``, ``+ - * / // % ~``, comparisons,
  ``in``/``not in``, ``and``/``or``/``not``, conditional ``x if c else y``;
* filters: ``join``, ``upper``, ``lower``, ``length``/``count``, ``default``, ``string``, ``int``,
  ``float``, ``first``, ``last``, ``reverse``, ``sort``, ``trim``, ``replace``, ``abs``, ``items``,
  ``list``, ``tojson``.

Values print as minijinja prints them: ``none``, ``true``/``false``, lists as ``[1, "a"]``.
An undefined name is an error (a typo in a case file should fail loudly, not render empty).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable


class TemplateError(Exception):
    """A template that does not parse or fails while rendering."""


# ---------------------------------------------------------------------------------------------
# Lexing of the template text into text / output / statement / comment pieces
# ---------------------------------------------------------------------------------------------

_TAG_START = re.compile(r"\{\{|\{%|\{#")
_TAG_END = {"{{": "}}", "{%": "%}", "{#": "#}"}


@dataclass
class _Piece:
    kind: str  # "text", "out", "stmt"
    body: str
    pos: int


def _split_pieces(source: str) -> list[_Piece]:
    pieces: list[_Piece] = []
    pos = 0
    strip_next = False
    while True:
        m = _TAG_START.search(source, pos)
        text = source[pos:m.start()] if m else source[pos:]
        if strip_next:
            text = text.lstrip()
        if m is None:
            if text:
                pieces.append(_Piece("text", text, pos))
            break
        opener = m.group()
        inner_start = m.end()
        if source.startswith("-", inner_start):
            text = text.rstrip()
            inner_start += 1
        if text:
            pieces.append(_Piece("text", text, pos))
        end = _find_tag_end(source, inner_start, _TAG_END[opener])
        if end < 0:
            raise TemplateError(f"unclosed {opener!r} at offset {m.start()}")
        inner_end = end
        strip_next = False
        if inner_end > inner_start and source[inner_end - 1] == "-":
            inner_end -= 1
            strip_next = True
        body = source[inner_start:inner_end]
        if opener == "{{":
            pieces.append(_Piece("out", body, m.start()))
        elif opener == "{%":
            pieces.append(_Piece("stmt", body, m.start()))
        pos = end + 2
    return pieces


def _find_tag_end(source: str, start: int, closer: str) -> int:
    """Find the closing delimiter, skipping string literals inside the tag."""
    i = start
    quote: str | None = None
    while i < len(source):
        ch = source[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"" and closer != "#}":
            quote = ch
        elif source.startswith(closer, i):
            return i
        i += 1
    return -1


# ---------------------------------------------------------------------------------------------
# Expression tokens and parser
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<num>\d+\.\d+|\d+)
      | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op>//|==|!=|<=|>=|[-+*/%~<>()\[\],.|:=])
    )""",
    re.VERBOSE,
)


@dataclass
class _Tok:
    kind: str
    value: str


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise TemplateError(f"unexpected character {text[pos:].strip()[:1]!r} in {text.strip()!r}")
        kind = m.lastgroup
        assert kind is not None
        toks.append(_Tok(kind, m.group(kind)))
        pos = m.end()
        if text[pos:].strip() == "":
            break
    toks.append(_Tok("end", ""))
    return toks


Expr = Callable[["_Scope"], Any]


class _ExprParser:
    """Recursive descent over the token list; produces closures evaluated against a scope."""

    def __init__(self, toks: list[_Tok], source: str) -> None:
        self.toks = toks
        self.i = 0
        self.source = source

    # token helpers
    def peek(self, offset: int = 0) -> _Tok:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def at(self, kind: str, value: str | None = None) -> bool:
        tok = self.peek()
        return tok.kind == kind and (value is None or tok.value == value)

    def at_word(self, word: str) -> bool:
        return self.at("name", word)

    def take(self) -> _Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, kind: str, value: str | None = None) -> _Tok:
        if not self.at(kind, value):
            want = value or kind
            got = self.peek().value or "end of expression"
            raise TemplateError(f"expected {want!r} but found {got!r} in {self.source.strip()!r}")
        return self.take()

    def expect_end(self) -> None:
        if not self.at("end"):
            raise TemplateError(f"unexpected {self.peek().value!r} in {self.source.strip()!r}")

    # grammar
    def expression(self) -> Expr:
        body = self.or_expr()
        if self.at_word("if"):
            self.take()
            cond = self.or_expr()
            other: Expr = lambda s: ""  # noqa: E731 - minijinja renders a missing else as empty
            if self.at_word("else"):
                self.take()
                other = self.expression()
            return lambda s: body(s) if _truthy(cond(s)) else other(s)
        return body

    def or_expr(self) -> Expr:
        left = self.and_expr()
        while self.at_word("or"):
            self.take()
            right = self.and_expr()
            left = (lambda a, b: lambda s: a(s) if _truthy(a(s)) else b(s))(left, right)
        return left

    def and_expr(self) -> Expr:
        left = self.not_expr()
        while self.at_word("and"):
            self.take()
            right = self.not_expr()
            left = (lambda a, b: lambda s: b(s) if _truthy(a(s)) else a(s))(left, right)
        return left

    def not_expr(self) -> Expr:
        if self.at_word("not"):
            self.take()
            inner = self.not_expr()
            return lambda s: not _truthy(inner(s))
        return self.comparison()

    _CMP: dict[str, Callable[[Any, Any], bool]] = {
        "==": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        "<": lambda a, b: a < b,
        ">": lambda a, b: a > b,
        "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b,
    }

    def comparison(self) -> Expr:
        left = self.concat()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.value in self._CMP:
                self.take()
                fn = self._CMP[tok.value]
            elif self.at_word("in"):
                self.take()
                fn = lambda a, b: a in b  # noqa: E731
            elif self.at_word("not") and self.peek(1).kind == "name" and self.peek(1).value == "in":
                self.take()
                self.take()
                fn = lambda a, b: a not in b  # noqa: E731
            else:
                return left
            right = self.concat()
            left = (lambda f, a, b: lambda s: _apply(f, a(s), b(s)))(fn, left, right)

    def concat(self) -> Expr:
        left = self.additive()
        while self.at("op", "~"):
            self.take()
            right = self.additive()
            left = (lambda a, b: lambda s: _display(a(s)) + _display(b(s)))(left, right)
        return left

    _ARITH: dict[str, Callable[[Any, Any], Any]] = {
        "+": lambda a, b: a + b,
        "-": lambda a, b: a - b,
        "*": lambda a, b: a * b,
        "/": lambda a, b: a / b,
        "//": lambda a, b: a // b,
        "%": lambda a, b: a % b,
    }

    def additive(self) -> Expr:
        left = self.term()
        while self.at("op", "+") or self.at("op", "-"):
            fn = self._ARITH[self.take().value]
            right = self.term()
            left = (lambda f, a, b: lambda s: _apply(f, a(s), b(s)))(fn, left, right)
        return left

    def term(self) -> Expr:
        left = self.unary()
        while any(self.at("op", o) for o in ("*", "/", "//", "%")):
            fn = self._ARITH[self.take().value]
            right = self.unary()
            left = (lambda f, a, b: lambda s: _apply(f, a(s), b(s)))(fn, left, right)
        return left

    def unary(self) -> Expr:
        if self.at("op", "-"):
            self.take()
            inner = self.unary()
            return lambda s: _apply(lambda a, _: -a, inner(s), None)
        if self.at("op", "+"):
            self.take()
            return self.unary()
        return self.filtered()

    def filtered(self) -> Expr:
        value = self.postfix()
        while self.at("op", "|"):
            self.take()
            name = self.expect("name").value
            if name not in _FILTERS:
                raise TemplateError(f"unknown filter {name!r}")
            args: list[Expr] = []
            if self.at("op", "("):
                args = self.call_args()
            value = (lambda f, v, a: lambda s: _run_filter(f, v(s), [x(s) for x in a]))(name, value, args)
        return value

    def call_args(self) -> list[Expr]:
        self.expect("op", "(")
        args: list[Expr] = []
        while not self.at("op", ")"):
            args.append(self.expression())
            if not self.at("op", ")"):
                self.expect("op", ",")
        self.expect("op", ")")
        return args

    def postfix(self) -> Expr:
        value = self.primary()
        while True:
            if self.at("op", "."):
                self.take()
                attr = self.expect("name").value
                value = (lambda v, a: lambda s: _getattr(v(s), a))(value, attr)
            elif self.at("op", "["):
                self.take()
                index = self.expression()
                self.expect("op", "]")
                value = (lambda v, k: lambda s: _getitem(v(s), k(s)))(value, index)
            else:
                return value

    def primary(self) -> Expr:
        tok = self.take()
        if tok.kind == "num":
            num: Any = float(tok.value) if "." in tok.value else int(tok.value)
            return lambda s: num
        if tok.kind == "str":
            text = _unquote(tok.value)
            return lambda s: text
        if tok.kind == "name":
            if tok.value in ("true", "True"):
                return lambda s: True
            if tok.value in ("false", "False"):
                return lambda s: False
            if tok.value in ("none", "None"):
                return lambda s: None
            if self.at("op", "("):
                if tok.value not in _FUNCTIONS:
                    raise TemplateError(f"unknown function {tok.value!r}")
                fn = _FUNCTIONS[tok.value]
                args = self.call_args()
                return lambda s: _call(fn, tok.value, [a(s) for a in args])
            name = tok.value
            return lambda s: s.lookup(name)
        if tok.kind == "op" and tok.value == "(":
            inner = self.expression()
            self.expect("op", ")")
            return inner
        if tok.kind == "op" and tok.value == "[":
            items: list[Expr] = []
            while not self.at("op", "]"):
                items.append(self.expression())
                if not self.at("op", "]"):
                    self.expect("op", ",")
            self.expect("op", "]")
            return lambda s: [x(s) for x in items]
        raise TemplateError(f"unexpected {tok.value or 'end of expression'!r} in {self.source.strip()!r}")


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), body)


def _apply(fn: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    try:
        return fn(a, b)
    except (TypeError, ZeroDivisionError, ValueError) as exc:
        raise TemplateError(f"invalid operation: {exc}") from None


def _call(fn: Callable[..., Any], name: str, args: list[Any]) -> Any:
    try:
        return fn(*args)
    except (TypeError, ValueError) as exc:
        raise TemplateError(f"{name}(): {exc}") from None


def _getattr(value: Any, attr: str) -> Any:
    if isinstance(value, dict):
        if attr in value:
            return value[attr]
        raise TemplateError(f"undefined attribute {attr!r}")
    if isinstance(value, _Loop) and attr in _Loop.ATTRS:
        return getattr(value, attr)
    raise TemplateError(f"undefined attribute {attr!r}")


def _getitem(value: Any, key: Any) -> Any:
    try:
        return value[key]
    except (KeyError, IndexError, TypeError) as exc:
        raise TemplateError(f"cannot index {_display(value)!r} with {_display(key)!r}: {exc}") from None


def _range(*args: Any) -> list[int]:
    if not 1 <= len(args) <= 3 or not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        raise TemplateError("range() takes one to three integers")
    values = range(*args)
    if len(values) > 1_000_000:
        raise TemplateError("range() is limited to 1000000 items")
    return list(values)


_FUNCTIONS: dict[str, Callable[..., Any]] = {"range": _range}


def _truthy(value: Any) -> bool:
    return bool(value)


def _repr(value: Any) -> str:
    """A value as it appears inside a printed list or map."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return _display(value)


def _display(value: Any) -> str:
    """A value as ``{{ }}`` prints it (minijinja's conventions)."""
    if value is None:
        return "none"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_repr(k)}: {_repr(v)}" for k, v in value.items()) + "}"
    return str(value)


def _filter_join(value: Iterable[Any], sep: str = "", *rest: Any) -> str:
    return sep.join(_display(v) for v in value)


def _filter_default(value: Any, fallback: Any = "", *rest: Any) -> Any:
    return fallback if value is None or value == "" else value


def _filter_replace(value: Any, old: str, new: str, *rest: Any) -> str:
    return _display(value).replace(old, new)


_FILTERS: dict[str, Callable[..., Any]] = {
    "join": _filter_join,
    "upper": lambda v: _display(v).upper(),
    "lower": lambda v: _display(v).lower(),
    "length": lambda v: len(v),
    "count": lambda v: len(v),
    "default": _filter_default,
    "d": _filter_default,
    "string": lambda v: _display(v),
    "int": lambda v: int(float(v)) if isinstance(v, str) and "." in v else int(v),
    "float": lambda v: float(v),
    "first": lambda v: v[0],
    "last": lambda v: v[-1],
    "reverse": lambda v: v[::-1] if isinstance(v, str) else list(reversed(list(v))),
    "sort": lambda v: sorted(v),
    "trim": lambda v: _display(v).strip(),
    "replace": _filter_replace,
    "abs": lambda v: abs(v),
    "items": lambda v: [[k, x] for k, x in v.items()],
    "list": lambda v: list(v),
    "tojson": lambda v: json.dumps(v, ensure_ascii=False),
}


def _run_filter(name: str, value: Any, args: list[Any]) -> Any:
    try:
        return _FILTERS[name](value, *args)
    except TemplateError:
        raise
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
        raise TemplateError(f"filter {name!r} failed on {_display(value)!r}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# Template tree and rendering
# ---------------------------------------------------------------------------------------------


class _Loop:
    ATTRS = ("index", "index0", "revindex", "revindex0", "first", "last", "length")

    def __init__(self, length: int) -> None:
        self.length = length
        self.index0 = 0

    @property
    def index(self) -> int:
        return self.index0 + 1

    @property
    def revindex(self) -> int:
        return self.length - self.index0

    @property
    def revindex0(self) -> int:
        return self.length - self.index0 - 1

    @property
    def first(self) -> bool:
        return self.index0 == 0

    @property
    def last(self) -> bool:
        return self.index0 == self.length - 1


class _Scope:
    def __init__(self, frames: list[dict[str, Any]]) -> None:
        self.frames = frames

    def lookup(self, name: str) -> Any:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        raise TemplateError(f"undefined variable {name!r}")

    def child(self, values: dict[str, Any]) -> "_Scope":
        return _Scope(self.frames + [values])


@dataclass
class _Text:
    text: str

    def render(self, scope: _Scope, out: list[str]) -> None:
        out.append(self.text)


@dataclass
class _Output:
    expr: Expr

    def render(self, scope: _Scope, out: list[str]) -> None:
        out.append(_display(self.expr(scope)))


@dataclass
class _Set:
    name: str
    expr: Expr

    def render(self, scope: _Scope, out: list[str]) -> None:
        scope.frames[-1][self.name] = self.expr(scope)


@dataclass
class _For:
    targets: list[str]
    iterable: Expr
    body: list[Any] = field(default_factory=list)
    else_body: list[Any] = field(default_factory=list)

    def render(self, scope: _Scope, out: list[str]) -> None:
        value = self.iterable(scope)
        if isinstance(value, dict):
            items = list(value.keys())
        elif isinstance(value, (list, tuple, str)):
            items = list(value)
        else:
            raise TemplateError(f"cannot iterate over {_display(value)!r}")
        if not items:
            _render_nodes(self.else_body, scope, out)
            return
        loop = _Loop(len(items))
        frame: dict[str, Any] = {"loop": loop}
        inner = scope.child(frame)
        for index, item in enumerate(items):
            loop.index0 = index
            if len(self.targets) == 1:
                frame[self.targets[0]] = item
            else:
                if not isinstance(item, (list, tuple)) or len(item) != len(self.targets):
                    raise TemplateError(f"cannot unpack {_display(item)!r} into {', '.join(self.targets)}")
                frame.update(zip(self.targets, item))
            _render_nodes(self.body, inner, out)


@dataclass
class _If:
    branches: list[tuple[Expr, list[Any]]] = field(default_factory=list)
    else_body: list[Any] = field(default_factory=list)

    def render(self, scope: _Scope, out: list[str]) -> None:
        for cond, body in self.branches:
            if _truthy(cond(scope)):
                _render_nodes(body, scope, out)
                return
        _render_nodes(self.else_body, scope, out)


def _render_nodes(nodes: list[Any], scope: _Scope, out: list[str]) -> None:
    for node in nodes:
        node.render(scope, out)


class Template:
    """A parsed template; :meth:`render` may be called many times with different contexts."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._nodes = self._parse(_split_pieces(source))

    def render(self, context: dict[str, Any]) -> str:
        out: list[str] = []
        _render_nodes(self._nodes, _Scope([dict(context), {}]), out)
        return "".join(out)

    @staticmethod
    def _parse(pieces: list[_Piece]) -> list[Any]:
        root: list[Any] = []
        # Each open block: (node, keyword that opened it, list currently collecting children).
        stack: list[tuple[Any, str, list[Any]]] = []

        def target() -> list[Any]:
            return stack[-1][2] if stack else root

        for piece in pieces:
            if piece.kind == "text":
                target().append(_Text(piece.body))
                continue
            if piece.kind == "out":
                parser = _ExprParser(_tokenize(piece.body), piece.body)
                expr = parser.expression()
                parser.expect_end()
                target().append(_Output(expr))
                continue
            parser = _ExprParser(_tokenize(piece.body), piece.body)
            keyword = parser.expect("name").value
            if keyword == "for":
                names = [parser.expect("name").value]
                while parser.at("op", ","):
                    parser.take()
                    names.append(parser.expect("name").value)
                if not parser.at_word("in"):
                    raise TemplateError(f"expected 'in' in {{% {piece.body.strip()} %}}")
                parser.take()
                node = _For(names, parser.or_expr())
                parser.expect_end()
                target().append(node)
                stack.append((node, "for", node.body))
            elif keyword == "if":
                cond = parser.expression()
                parser.expect_end()
                node = _If([(cond, [])])
                target().append(node)
                stack.append((node, "if", node.branches[0][1]))
            elif keyword == "elif":
                if not stack or stack[-1][1] != "if":
                    raise TemplateError("{% elif %} without {% if %}")
                cond = parser.expression()
                parser.expect_end()
                node = stack[-1][0]
                node.branches.append((cond, []))
                stack[-1] = (node, "if", node.branches[-1][1])
            elif keyword == "else":
                parser.expect_end()
                if not stack or stack[-1][1] not in ("if", "for"):
                    raise TemplateError("{% else %} outside {% if %} or {% for %}")
                node, kind, _ = stack[-1]
                stack[-1] = (node, kind + "-else", node.else_body)
            elif keyword in ("endfor", "endif"):
                parser.expect_end()
                opened = keyword[3:]
                if not stack or stack[-1][1].split("-")[0] != opened:
                    raise TemplateError(f"{{% {keyword} %}} without matching {{% {opened} %}}")
                stack.pop()
            elif keyword == "set":
                name = parser.expect("name").value
                parser.expect("op", "=")
                expr = parser.expression()
                parser.expect_end()
                target().append(_Set(name, expr))
            else:
                raise TemplateError(f"unknown tag {{% {keyword} %}}")
        if stack:
            raise TemplateError(f"unclosed {{% {stack[-1][1].split('-')[0]} %}} block")
        return root


def render_template(source: str, context: dict[str, Any]) -> str:
    """Parse and render in one step."""
    return Template(source).render(context)
