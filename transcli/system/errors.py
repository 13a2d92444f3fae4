"""The one exception type a user can cause.

Library code raises `UserError` with a single line that says what is wrong and
where (file, line, key). The CLI prints that line and exits non-zero; anything
else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """A problem with the user's input, config or files, reported as one line."""


class WriteFailed(UserError):
    """A file could not be written (disk full, no permission): what is being written
    may add what was saved before."""


def first_line(exc: BaseException) -> str:
    """What an exception says, in one line: its message's first line, else its type's name
    (a library's message may run to a page)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
