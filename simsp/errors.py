"""The one error type for bad user input."""

import reprlib

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlong = 40
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = 12
_SHORT.maxdict = 8
_SHORT.maxlevel = 4


def short_repr(value) -> str:
    """repr(value), shortened: an error line quotes what the user gave, but a megabyte string,
    an alias bomb or a 400-digit integer must not become a megabyte of stderr."""
    try:
        return _SHORT.repr(value)
    except (ValueError, RecursionError):  # ints past sys.get_int_max_str_digits, cycles
        return f"<{type(value).__name__}>"


MAX_NAME = 200
"""Characters of a file name or key an error line quotes before it cuts the rest."""


def printable(text: str, limit: int = 0) -> str:
    """text for one terminal line: control characters (newlines, escape sequences that would
    recolour or move the terminal) written as their escapes, and cut to `limit` characters."""
    out = "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode() for c in text
    )
    return out if not limit or len(out) <= limit else out[: limit - 3] + "..."


class InputError(Exception):
    """Bad user input: names the file, the key, the value and the rule broken, on one line."""

    def __init__(self, file, key, value, rule):
        self.file, self.key, self.value, self.rule = str(file), key, value, rule
        where = f"{printable(self.file, MAX_NAME)}: {printable(str(key), MAX_NAME)}"
        super().__init__(f"{where}={short_repr(value)}: {printable(str(rule))}")


class _NotShown:
    """A value an error does not quote: what an unknown key holds may be anything (a token in a
    file someone else named), so an error names the key, never its value."""

    def __repr__(self) -> str:
        return "(not shown)"


NOT_SHOWN = _NotShown()


def unknown_key_rule(key, known) -> str:
    """The rule for a key that is not one of `known`: the nearest names, else all of them."""
    import difflib

    near = difflib.get_close_matches(str(key), [str(k) for k in known], n=3, cutoff=0.6)
    if near:
        return f"unknown key; did you mean {' or '.join(near)}?"
    return f"unknown key; known: {', '.join(map(str, known))}"


def unquoted(e: InputError) -> InputError:
    """The same error without the value: for a file that a spec or a runs CSV named, not the
    command line, whose contents an error must not copy into a log (issue 32)."""
    return InputError(e.file, e.key, NOT_SHOWN, e.rule)
