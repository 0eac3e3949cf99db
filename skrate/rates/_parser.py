"""The string form of rate specs: ``"tpr[race=Black] >= 0.95 * tpr"``.

Grammar::

    constraint := expr ("<=" | ">=") expr
    expr       := term (("+" | "-") term)*
    term       := unary (("*" | "/") unary)*
    unary      := ("-" | "+") unary | atom
    atom       := NUMBER | RATE ["[" filter ("," filter)* "]" | call] | "(" expr ")"
    filter     := KEY                       # expand over every value of group column KEY
                | KEY "=" VALUE ("|" VALUE)*  # examples whose KEY is any of the values
    call       := "(" arguments ")"         # as in Python: tpr(group="race"), tpr(race=["a", "b"])

Values are bare text up to ``,``, ``|`` or ``]`` (so ``African-American`` needs no quotes)
or double-quoted strings. A call takes the rate function's Python arguments as literals, so a
goal written in Python reads the same inside a string. Parentheses and signs nest at most 100
levels deep.
"""

from __future__ import annotations

import ast
import warnings
from typing import Any, NoReturn

import numpy as np

from ._expression import Constraint, Expression, Ratio
from ._functions import RATE_FUNCTIONS, _filters
from ._slice import Slice


def _pointer(text: str, pos: int) -> str:
    """The line of ``text`` that holds ``pos``, and a caret under it (tabs kept, so it lines up)."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = text[start:] if end < 0 else text[start:end]
    pad = "".join(c if c == "\t" else " " for c in text[start:pos])
    return f"    {line}\n    {pad}^"


class SpecParseError(ValueError):
    """A rate spec string could not be parsed (``expected`` says what was expected), or parses
    into nothing valid (``reason`` says why: a chained comparison, a product of rates, a division
    by zero); the message points at the position.

    Each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    text : str
        The spec string.
    pos : int
        The position (character index) in ``text`` the error is at.
    expected : str, default=None
        What was expected at ``pos``, for a parse error.
    reason : str, default=None
        Why the spec is invalid, for a spec that parses into nothing valid; when given,
        ``expected`` is not used in the message.
    """

    def __init__(self, text: str, pos: int, expected: str | None = None, reason: str | None = None):
        self.text, self.pos, self.expected, self.reason = text, pos, expected, reason
        if reason is None:
            found = repr(text[pos]) if pos < len(text) else "the end of the text"
            head = f"Cannot parse {text!r}: expected {expected} at position {pos}, found {found}."
        else:
            head = f"Invalid spec {text!r} (near position {pos}): {reason}"
        super().__init__(f"{head}\n{_pointer(text, pos)}")

    def __reduce__(self):  # pickled by its arguments, not its message: it crosses joblib's processes
        return type(self), (self.text, self.pos, self.expected, self.reason)


# Names of the goal helpers (and fairlearn's), which build lists of constraints in Python: in a
# spec they are a mistake to explain, not an unknown rate
_GOALS = {name: name for name in (
    "statistical_parity", "demographic_parity", "equal_opportunity", "equal_odds", "equal_accuracy",
    "minimum_coverage", "minimum_accuracy", "minimum_recall", "accurate_coverage", "no_lost_benefits",
    "not_worse_off")} | {"equalized_odds": "equal_odds", "true_positive_rate_parity": "equal_opportunity"}

# other libraries' names of the rates
_RATE_SYNONYMS = {"selection_rate": "ppr", "positive_prediction_rate": "ppr", "true_positive_rate": "tpr",
                  "false_positive_rate": "fpr", "true_negative_rate": "tnr", "false_negative_rate": "fnr",
                  "negative_prediction_rate": "npr"}

# F-measures are not rates but ratios of them: a bound on one is linear, an objective needs MetricOptimizer
_F_MEASURES = {"f_score", "fscore", "f_measure", "f1_score", "fbeta", "f_beta"}
# non-linear metrics of skrate.generalized: a bound on one is an object built there, not a spec
_METRICS = {"g_mean": "g_mean_at_least(0.7)", "h_mean": "h_mean() <= 0.3", "q_mean": "q_mean() <= 0.3",
            "kld": "kld_fairness('sex', 0.01)", "pr_auc": None}


def _goal_call(goal: str) -> str:
    """``goal(first, second=default)``: the goal helper's positional parameters, as a call."""
    import inspect

    from . import _goals

    params = [p for p in inspect.signature(getattr(_goals, goal)).parameters.values()
              if p.kind is not p.KEYWORD_ONLY]
    return f"{goal}({', '.join(p.name if p.default is p.empty else f'{p.name}={p.default!r}' for p in params)})"


# Parentheses and signs nest the recursive descent a few frames a level: deeper nesting would
# overflow Python's stack (a RecursionError that points at nothing)
_MAX_NESTING = 100


class _Parser:
    def __init__(self, text: str):
        self.text, self.pos, self.depth = text, 0, 0

    # -- characters -------------------------------------------------------------------
    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _peek(self, s: str) -> bool:
        self._skip()
        return self.text.startswith(s, self.pos)

    def _eat(self, s: str) -> bool:
        if self._peek(s):
            self.pos += len(s)
            return True
        return False

    def _expect(self, s: str, what: str | None = None) -> None:
        if not self._eat(s):
            raise SpecParseError(self.text, self.pos, what or repr(s))

    def _word(self) -> str:
        """The run of letters, digits and ``_`` at the position (possibly empty)."""
        self._skip()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] == "_"):
            self.pos += 1
        return self.text[start:self.pos]

    def _name(self) -> str | None:
        start = self.pos
        name = self._word()
        if name and not name[0].isdigit():
            return name
        self.pos = start
        return None

    def _key(self) -> str | None:
        """A group column name: letters, digits and ``_`` (a DataFrame's integer name ``0`` too),
        or any text in double quotes (``"marital-status"``)."""
        self._skip()
        if self._peek('"'):
            return self._value()
        return self._word() or None

    def _number(self) -> float | None:
        self._skip()
        start, t = self.pos, self.text
        while self.pos < len(t) and (t[self.pos].isdigit() or t[self.pos] == "."):
            self.pos += 1
        if self.pos < len(t) and t[self.pos] in "eE" and self.pos > start:
            exp = self.pos + 1 + (self.pos + 1 < len(t) and t[self.pos + 1] in "+-")
            if exp < len(t) and t[exp].isdigit():
                self.pos = exp
                while self.pos < len(t) and t[self.pos].isdigit():
                    self.pos += 1
        if self.pos == start:
            return None
        try:
            value = float(t[start:self.pos])
        except ValueError:  # "1.2.3", "."
            self._fail(start, f"{t[start:self.pos]!r} is not a number; write it with at most one decimal "
                              "point and at least one digit (0.5, 2, 1e-3).")
        if not np.isfinite(value):
            self._fail(start, f"{t[start:self.pos]} overflows a float; write a finite number.")
        return value

    def _value(self) -> str:
        self._skip()
        t = self.text
        if self.pos < len(t) and t[self.pos] == '"':
            end = self.pos + 1
            out = []
            while end < len(t) and t[end] != '"':
                if t[end] == "\\" and end + 1 < len(t):
                    end += 1
                out.append(t[end])
                end += 1
            if end >= len(t):
                raise SpecParseError(t, end, "a closing '\"'")
            self.pos = end + 1
            return "".join(out)
        start = self.pos
        while self.pos < len(t) and t[self.pos] not in ",|]":
            self.pos += 1
        value = t[start:self.pos].strip()
        if not value:
            raise SpecParseError(t, start, "a group value")
        self._check_closed(start, self.pos)
        if "=" in value:  # 'sex=Female age_cat=x': most likely a missing comma
            raise SpecParseError(t, t.index("=", start), "',' between two filters (a value holding '=' goes "
                                                        "in double quotes)")
        return value

    def _check_closed(self, start: int, end: int,
                      expected: str = "']' to close the filters before the comparison") -> None:
        """Refuse a comparison between ``start`` and ``end``, inside the brackets: most likely the
        closing ']' was forgotten (``tpr[race=Black >= 0.9 * tpr``)."""
        quote = None
        for i in range(start, min(end, len(self.text)) - 1):
            ch = self.text[i]
            if quote is None and self.text[i:i + 2] in ("<=", ">="):  # a quoted value may hold one
                raise SpecParseError(self.text, i, expected)
            if ch in "'\"" and quote in (None, ch):
                quote = None if quote else ch

    # -- grammar ----------------------------------------------------------------------
    def constraint(self) -> Constraint:
        lhs = self.expr()
        for op in ("<=", ">="):
            if self._eat(op):
                op_pos = self.pos - len(op)
                rhs = self.expr()
                if self._peek("<=") or self._peek(">="):
                    self._fail(self.pos, "a spec holds one comparison; write a <= b <= c as two "
                                         "constraints, 'a <= b' and 'b <= c'.")
                self._end()
                return self._build(lambda: Constraint.make(lhs, op, rhs), op_pos)
        if self._peek("="):
            self._fail(self.pos, "rates are compared with '<=' or '>='. Write an equality a == b as two "
                                 "constraints, 'a <= b' and 'a >= b', or bound the gap on both sides, "
                                 "'a - b <= 0.01' and 'a - b >= -0.01'.")
        for strict in "<>":
            if self._peek(strict):
                self._fail(self.pos, f"rates are compared with '<=' or '>=': write '{strict}=' for '{strict}'.")
        raise SpecParseError(self.text, self.pos, "'<=' or '>='" + (" or an operator" if self.pos < len(self.text) else ""))

    def expression(self):
        out = self.expr()
        if self._peek("<=") or self._peek(">="):
            self._fail(self.pos, "this is a constraint, not an expression: constraints go in "
                                 "constraints=, an objective or metric is an expression such as 'error_rate'.")
        self._end()
        return out

    def _end(self) -> None:
        self._skip()
        if self.pos != len(self.text):
            raise SpecParseError(self.text, self.pos, "an operator or the end of the spec")

    def _fail(self, pos: int, reason: str) -> NoReturn:
        raise SpecParseError(self.text, pos, reason=reason)

    def _build(self, make, pos: int):
        """``make()``, its errors pointing at ``pos``: the start of the offending token."""
        try:
            out = make()
        except (TypeError, ValueError, ZeroDivisionError) as exc:
            self._fail(pos, str(exc))
        if isinstance(out, float) and not np.isfinite(out):  # arithmetic on numbers alone
            self._fail(pos, "the number overflows a float here; write a finite number.")
        return out

    def expr(self):
        out = self.term()
        while True:
            if self._peek("+"):
                op_pos = self.pos
                self.pos += 1
                rhs = self.term()
                out = self._build(lambda a=out, b=rhs: a + b, op_pos)
            elif self._peek("-"):
                op_pos = self.pos
                self.pos += 1
                rhs = self.term()
                out = self._build(lambda a=out, b=rhs: a - b, op_pos)
            else:
                return out

    def term(self):
        out = self.unary()
        while True:
            if self._peek("*"):
                op_pos = self.pos
                self.pos += 1
                rhs = self.unary()
                out = self._build(lambda a=out, b=rhs: a * b if not isinstance(a, float) else b * a, op_pos)
            elif self._eat("/"):
                self._skip()
                divisor_pos = self.pos
                rhs = self.unary()
                if isinstance(rhs, float) and rhs == 0.0:
                    self._fail(divisor_pos, "division by zero in the spec; divide by a nonzero constant.")
                out = self._build(lambda a=out, b=rhs: a / b, divisor_pos)
            else:
                return out

    def _nested(self, pos: int, parse):
        """``parse()`` one nesting level deeper, refused at ``pos`` past ``_MAX_NESTING``."""
        if self.depth >= _MAX_NESTING:
            self._fail(pos, f"parentheses and signs nest deeper than {_MAX_NESTING} levels here; "
                            "write the spec with fewer.")
        self.depth += 1
        try:
            return parse()
        finally:
            self.depth -= 1

    def unary(self):
        self._skip()
        pos = self.pos
        if self._eat("-"):
            return -self._nested(pos, self.unary)
        if self._eat("+"):
            return self._nested(pos, self.unary)
        return self.atom()

    def atom(self):
        self._skip()
        pos = self.pos
        if self._eat("("):
            inner = self._nested(pos, self.expr)
            self._expect(")")
            return inner
        number = self._number()
        if number is not None:
            return number
        start = self.pos
        name = self._name()
        if name is None:
            raise SpecParseError(self.text, self.pos, "a rate name, a number or '('")
        if name not in RATE_FUNCTIONS:
            self.pos = start
            if name.lower() in _GOALS:
                goal = _goal_call(_GOALS[name.lower()])
                raise SpecParseError(self.text, start, reason=(
                    f"{name!r} names a goal, not a rate: pass skrate.rates.{goal}, a list of "
                    f"constraints (strings may sit beside it in constraints=[...]), or write them out, e.g. "
                    f"'ppr[race] <= ppr + 0.05' and 'ppr[race] >= ppr - 0.05' for statistical parity"))
            if name.lower() in _F_MEASURES:
                raise SpecParseError(self.text, start, reason=(
                    f"{name!r} is an F-measure: the F1 score is the ratio 'f1' here ('f1[sex=a] >= 0.6'); "
                    "another F-beta is a metric, MetricOptimizer(metric='f2') or "
                    "skrate.generalized.f_measure(beta)"))
            if name.lower() in _METRICS:
                bound = _METRICS[name.lower()]
                how = ("it is an objective only: MetricOptimizer(metric='pr_auc')" if bound is None else
                       f"MetricOptimizer takes it as metric={name.lower()!r}, and a bound on it as an object of "
                       f"skrate.generalized, e.g. constraints=[{bound}] (strings may sit beside it)")
                raise SpecParseError(self.text, start, reason=f"{name!r} is a non-linear metric, not a rate: {how}")
            known = f"one of {', '.join(sorted(RATE_FUNCTIONS))}"
            # names are lower case ('TPR', 'F1' are 'tpr', 'f1')
            meant = name.lower() if name.lower() in RATE_FUNCTIONS else _RATE_SYNONYMS.get(name.lower())
            if meant is not None:
                known = f"{name!r} is {meant!r} here; {known}"
            raise SpecParseError(self.text, start, f"a rate name ({known})")
        if self._peek("("):
            args, kwargs, positions = self._call()
            self._check_arguments(args, kwargs, positions)
            return self._build(lambda: RATE_FUNCTIONS[name](*args, **kwargs), start)
        filters, expand = {}, []
        if self._eat("["):
            if not self._peek("]"):
                while True:
                    self._skip()
                    key_pos = self.pos
                    key = self._key()
                    if key is None:
                        raise SpecParseError(self.text, self.pos, 'a group column name (in double quotes when '
                                                                   'it holds other characters than letters, '
                                                                   'digits and _)')
                    self._skip()
                    self._check_closed(self.pos, self.pos + 2)
                    if self.text[key_pos] != '"' and self.pos < len(self.text) and self.text[self.pos] not in "=,]":
                        rest = self.text[key_pos:]
                        name = rest[:min([rest.index(ch) for ch in "=,]" if ch in rest] or [len(rest)])].strip()
                        raise SpecParseError(self.text, self.pos, "'=', ',' or ']' after the column name "
                                             f"{key!r}; a name with other characters than letters, digits "
                                             f'and _ goes in double quotes: "{name}"')
                    if key in filters or key in expand:
                        raise SpecParseError(self.text, key_pos, f"each column once (repeated {key!r})")
                    if self._eat("="):
                        values = [self._filter_value(key)]
                        while self._eat("|"):
                            values.append(self._filter_value(key))
                        filters[key] = values if len(values) > 1 else values[0]
                    else:
                        self._build(lambda: Slice.make(expand=key), key_pos)
                        expand.append(key)
                    if not self._eat(","):
                        break
            self._check_closed(self.pos, self.pos + 2)
            self._expect("]", "',' or ']'")
        return self._build(lambda: RATE_FUNCTIONS[name](group=expand or None, where=filters), start)

    def _call(self) -> tuple[list[Any], dict[str, Any], list[int]]:
        """The arguments of ``RATE(...)`` at the position, read as Python reads a call: literal
        values (quoted text, numbers, lists), keywords for the filters and ``group``; and where
        each argument's value starts, positional ones first."""
        self._skip()
        open_pos, close = self.pos, self._closing(self.pos)
        source = "f" + self.text[open_pos:close + 1]
        lines = source.split("\n")
        starts = np.cumsum([0] + [len(line) + 1 for line in lines])

        def at(line: int | None, col: int | None, in_bytes: bool = True) -> int:
            """ast's (line, column) as a position in the spec; node columns count UTF-8 bytes."""
            line = (line or 1) - 1
            if in_bytes:
                col = len(lines[line].encode()[:col or 0].decode(errors="ignore"))
            return min(open_pos - 1 + int(starts[line]) + (col or 0), close)

        try:
            with warnings.catch_warnings():  # Python's own syntax warnings: the spec's error says more
                warnings.simplefilter("ignore", SyntaxWarning)
                warnings.simplefilter("ignore", DeprecationWarning)  # invalid escapes before Python 3.12
                call = ast.parse(source, mode="eval").body
        except SyntaxError as exc:  # its offset counts from 1
            msg = exc.msg.rstrip(".?") + ("?" if exc.msg.endswith("?") else ".")
            self._fail(at(exc.lineno, (exc.offset or 1) - 1, in_bytes=False),
                       f"the arguments do not parse as Python: {msg}")
        except (RecursionError, MemoryError):  # Python's own parser gives up on deep nesting
            self._fail(open_pos, "the arguments nest too deeply to parse; write each value once, as a literal.")
        if not isinstance(call, ast.Call):  # 'tpr(a)(b)': more than one call
            self._fail(open_pos, 'a rate call is its name and arguments in parentheses, e.g. tpr(group="race").')

        def literal(node: ast.expr) -> Any:
            if isinstance(node, ast.Starred):
                self._fail(at(node.lineno, node.col_offset), "'*' in a spec; write each argument out.")
            try:
                return ast.literal_eval(node)
            except (ValueError, TypeError):  # a name, a call; a list inside a set or a dict's key
                self._fail(at(node.lineno, node.col_offset), 'a literal value: text in quotes (race="Black"), '
                                                               "a number, or a list of them.")

        args, kwargs = [literal(node) for node in call.args], {}
        for item in call.keywords:
            if item.arg is None:
                self._fail(at(item.lineno, item.col_offset), "'**' in a spec; write each keyword out.")
            if item.arg in kwargs:
                self._fail(at(item.lineno, item.col_offset), f"each keyword once (repeated {item.arg!r}).")
            kwargs[item.arg] = literal(item.value)
        self.pos = close + 1
        values = [*call.args, *(item.value for item in call.keywords)]
        return args, kwargs, [at(node.lineno, node.col_offset) for node in values]

    def _check_arguments(self, args: list[Any], kwargs: dict[str, Any], positions: list[int]) -> None:
        """Each argument of a rate call checked on its own, so that an error points at it."""
        named = [("group", args[0], positions[0])] if args else []  # more than one positional: the call says
        named += zip(kwargs, kwargs.values(), positions[len(args):])
        for key, value, pos in named:
            if key == "group":
                self._build(lambda: Slice.make(expand=value), pos)
            elif key == "where":
                self._build(lambda: Slice.make(_filters(value, {})), pos)
            else:
                self._build(lambda: Slice.make({key: value}), pos)

    def _closing(self, start: int) -> int:
        """Index of the ``)`` that closes the ``(`` at ``start``, outside quotes and brackets."""
        t, depth, quote, i = self.text, 0, None, start
        while i < len(t):
            ch = t[i]
            if quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        if quote:
            raise SpecParseError(t, len(t), "a closing quote")
        self._check_closed(start, len(t), "')' to close the arguments before the comparison")
        raise SpecParseError(t, len(t), "')' to close the arguments")

    def _filter_value(self, key: str) -> str:
        """One value of a filter, checked on its own so that an error points at it."""
        self._skip()
        pos = self.pos
        value = self._value()
        self._build(lambda: Slice.make({key: value}), pos)
        return value


def _lift_number(x):
    return Expression((), x) if isinstance(x, float) else x


def parse_constraint(text: str) -> Constraint:
    """Parse ``"lhs <= rhs"`` or ``"lhs >= rhs"`` into a :class:`~skrate.rates.Constraint`.

    Parameters
    ----------
    text : str
        Rate expressions on both sides of ``<=`` or ``>=``, e.g. ``"tpr[race] >= 0.95 * tpr"``
        or ``"precision[sex=Female] >= 0.6"``. A bare group column in brackets (``[race]``)
        expands to one constraint per value at fit time; ``[race=A|B]`` means "any of";
        column names with characters other than letters, digits and ``_`` go in double
        quotes. The Python calls read the same: ``"tpr(group='race') >= 0.95 * tpr()"``.

    Returns
    -------
    Constraint

    Raises
    ------
    SpecParseError
        When ``text`` does not parse, with the position and what was expected there; or when
        it parses but means nothing valid (a chained comparison, a ratio compared with a rate,
        a product of rates, a division by zero), with the position and why.
    TypeError
        When ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"A constraint spec must be a string, got {type(text).__name__}.")
    return _Parser(text).constraint()


def parse_expression(text: str) -> Expression | Ratio:
    """Parse a rate expression such as ``"0.5 * tpr[sex=Female] + 0.5 * tnr"``.

    Parameters
    ----------
    text : str
        Rates on slices added with ``+`` and ``-``, scaled with ``*`` and ``/`` by numbers,
        grouped with parentheses. A named ratio (``precision``, ``win_loss_ratio``) may be
        scaled but not added to anything.

    Returns
    -------
    Expression or Ratio
        A ratio for a named ratio, an expression otherwise (a bare number is a constant
        expression).

    Raises
    ------
    SpecParseError
        When ``text`` does not parse, with the position and what was expected there; or when
        it parses but means nothing valid (a ratio added to a rate, a product of rates, a
        division by zero, a comparison), with the position and why.
    TypeError
        When ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"A rate expression must be a string, got {type(text).__name__}.")
    return _lift_number(_Parser(text).expression())
