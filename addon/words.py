"""Text a person reads: counts, durations, articles, and one line for any error.

Every floor uses these (the compiler's node messages, the runs' status lines, the panel), so they
live at the bottom, without Blender.
"""

from __future__ import annotations

#: Errors whose text is already written for a person (no exception class name in front).
READABLE_ERRORS = ("CompileError", "ModelFormatError", "SessionError", "EnvCheckError", "BuildError", "SwitcherError",
                   "MergeFailure")


def article(word: str) -> str:
    """``word`` with its indefinite article: "a camera", "an armature", "an empty"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def count(n: int, word: str, plural: str | None = None) -> str:
    """``1 episode``, ``3 episodes``."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def format_duration(seconds: float) -> str:
    """``0:38``, ``12:05``, ``1 h 05``: a time left as a person reads it."""
    seconds = int(round(max(0.0, seconds)))
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d}"


def describe_error(exc: BaseException) -> str:
    """One readable line for the panel: compile errors per node, model-file errors as they are."""
    errors = getattr(exc, "errors", None)
    if errors:
        parts = []
        for item in errors:
            if isinstance(item, (tuple, list)) and len(item) == 2:
                parts.append(f"{item[0]}: {item[1]}" if item[0] else str(item[1]))
            else:
                parts.append(str(item))
        return "; ".join(parts)
    text = str(exc) or type(exc).__name__
    return text if type(exc).__name__ in READABLE_ERRORS else f"{type(exc).__name__}: {text}"
