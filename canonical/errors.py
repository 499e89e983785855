"""Errors a user can cause.

Every error a user can provoke (a bad copybook, a bad configuration, a bad record, an
unreachable host) is a :class:`CouplerError`. Its message says what went wrong, where
(file:line, key path or byte offset) and, when there is one, what to do about it. The
CLI prints ``str(error)`` on one line and exits non-zero without a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence

from coupler.canonical.plain import Plain


class CouplerError(Exception):
    """Base class of every error a user can cause.

    ``where`` is the place (``file:line``, ``key.path``, ``byte 1234``) and ``hint`` what to
    do; both are optional and are joined into the one-line message.
    """

    exit_code = 1

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        self.message = message
        self.where = where
        self.hint = hint
        super().__init__(self._render())

    def add_hint(self, more: str) -> None:
        """Append ``more`` to what to do (a caller that knows how the input was named)."""
        self.hint = f"{self.hint}; {more}" if self.hint else more
        self.args = (self._render(),)

    def relocate(self, where: str) -> None:
        """Name ``where`` as the place instead (a caller that knows the name a user gave it)."""
        self.where = where
        self.args = (self._render(),)

    def _render(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text = f"{text} ({self.hint})"
        return one_line(text)


def one_line(text: object) -> str:
    """``text`` on one line, as a message is rendered (libxml2 ends some of its messages with a
    newline: ``Char 0x0 out of allowed range\\n, line 1, column 2``)."""
    return " ".join(str(text).split("\n"))


class TranslationError(CouplerError):
    """A document, record or payload a translator cannot translate, or a translation it is
    asked for that cannot be done (a format specification, a mapping's input). The one class
    of the mapping translator (``coupler.translators.mapping.TranslateError``, its old name)
    and of the socket adapter's payload translators
    (``coupler.adapters.socket.translate.TranslationError``)."""


class UsageError(CouplerError):
    """The command line itself is wrong (exit code 2)."""

    exit_code = 2


class FormatIndicatorError(CouplerError):
    """A format indicator that is not ``name@version``."""


class EnvelopeError(CouplerError):
    """Bytes that are not a serialised envelope, or an envelope with an invalid header."""


class SchemaError(CouplerError):
    """A schema that cannot be loaded or parsed, or a subject or version that does not exist."""


class UnknownSchemaError(SchemaError):
    """A subject the registry does not hold (``no schema named ...``)."""


class IncompatibleSchemaError(SchemaError):
    """A schema change refused by a compatibility check; ``reasons`` lists every problem."""

    def __init__(self, subject: str, reasons: list[str], *, where: str | None = None):
        self.subject = subject
        self.reasons = list(reasons)
        super().__init__(
            f"{subject}: incompatible: " + "; ".join(self.reasons), where=where
        )


class ConversionError(SchemaError):
    """A record that cannot be converted between two versions of a canonical entity."""


class UnitError(CouplerError):
    """An unexpected exception raised while handling one unit of work (a file, a record, a
    frame, a request): a bug in a translator or a mapping function, or an input nobody
    foresaw. The unit goes to the error directory or the Invalid Message Channel with this
    error as its cause; the adapter goes on with the next unit."""

    @classmethod
    def of(cls, exc: BaseException, *, where: str | None = None) -> CouplerError:
        """``exc`` as a one-line :class:`CouplerError` (a CouplerError is returned as it is)."""
        if isinstance(exc, CouplerError):
            return exc
        return cls(describe_exception(exc), where=where,
                   hint="the unit was set aside; report this if the input looks valid")


def describe_exception(exc: BaseException) -> str:
    """One line naming an unexpected exception and the code that raised it:
    ``OverflowError: year overflow (raised at scalars.py:106 in parse_date)``."""
    text = " ".join(str(exc).split()) or "(no message)"
    tb = exc.__traceback__
    frame = None
    while tb is not None:
        frame = tb
        tb = tb.tb_next
    if frame is None:
        return f"{type(exc).__name__}: {text}"
    code = frame.tb_frame.f_code
    name = code.co_filename.rsplit("/", 1)[-1]
    return f"{type(exc).__name__}: {text} (raised at {name}:{frame.tb_lineno} in {code.co_name})"


class Problem(Plain, frozen=True):
    """One thing wrong with a set of options: where (key path, and line when known) and what."""

    path: str
    message: str
    #: the concrete location (keys and list indices), to find the line in the source file
    loc: tuple[str | int, ...] = ()
    line: int | None = None

    def __init__(self, path: str, message: str, loc: tuple[str | int, ...] = (), line: int | None = None) -> None:
        self.__dict__.update(path=path, message=message, loc=loc, line=line)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class OptionsError(CouplerError):
    """Options that do not validate; ``problems`` lists each one (all are in the message).

    Here, not in :mod:`coupler.canonical.options`, so that options checked without pydantic
    (the copybook options, on every `copybook decode` start-up) raise it without importing pydantic."""

    def __init__(
        self, problems: Sequence[Problem | str] | str, *, where: str | None = None, hint: str | None = None
    ):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = [p if isinstance(p, Problem) else Problem("", p) for p in problems]
        texts = [str(p) for p in self.problems]
        message = texts[0] if len(texts) == 1 else f"{len(texts)} problems: " + "; ".join(texts)
        super().__init__(message, where=where, hint=hint)
