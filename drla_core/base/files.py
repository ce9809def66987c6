"""Writing files so that a crash or a full disk never leaves a half-written model or picture."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "new_file_mode"]


def _umask() -> int:
    """The process umask, read without changing it where the system allows (Linux), else set and put back."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode(path: str | os.PathLike[str]) -> int:
    """The permissions ``open(path, "w")`` would leave: the existing file's, or ``0o666`` less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def atomic_write(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``.

    Readers see the old file or the new one, never a mix; on any error the temporary file is removed.
    The file gets the permissions a plain ``open(path, "w")`` gives (``tempfile.mkstemp`` alone would
    make it owner-only whatever the user's umask).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if os.name == "posix":
                os.fchmod(f.fileno(), new_file_mode(path))
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
