"""Run `rummy ...` with a watch on the filesystem: every attempt to write (open for writing,
create, remove, rename, change a file) outside the allowed directories is written to the file
named by ``RO_LOG``. The containers run with a read-only root filesystem and a writable /tmp:
such an attempt would fail there.

    RO_LOG=/tmp/x.log [RO_ALLOWED=/tmp:/dev] python readonly_hook.py gateway --port 8080

Only the audit events of CPython (``sys.addaudithook``) are watched: what C extensions write
behind Python's back is not seen (none of the dependencies writes files).
"""

from __future__ import annotations

import os
import sys
from typing import Any

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
CHANGES = {
    "os.mkdir",
    "os.remove",
    "os.rmdir",
    "os.rename",
    "os.replace",
    "os.symlink",
    "os.link",
    "os.truncate",
    "os.chmod",
    "os.chown",
    "os.utime",
    "shutil.copyfile",
    "shutil.copytree",
    "shutil.move",
    "shutil.rmtree",
}


def install() -> None:
    """Start watching (the log file is opened first, so its own writes are not reported)."""
    allowed = tuple(p.rstrip("/") for p in os.environ.get("RO_ALLOWED", "/tmp:/dev").split(":"))
    log = open(os.environ["RO_LOG"], "a", buffering=1, encoding="utf-8")  # noqa: SIM115

    def outside(path: Any) -> bool:
        if path is None or isinstance(path, int):  # a file descriptor already open
            return False
        full = os.path.abspath(os.fsdecode(path))
        return not any(full == a or full.startswith(a + "/") for a in allowed if a)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            writing = bool(flags & WRITE_FLAGS) or any(c in str(mode or "") for c in "wax+")
            if writing and outside(path):
                log.write(f"open {os.fsdecode(path)} mode={mode!r}\n")
        elif event in CHANGES and args and outside(args[0]):
            log.write(f"{event} {os.fsdecode(args[0])}\n")

    sys.addaudithook(hook)


if __name__ == "__main__":
    install()
    from services.main import main

    sys.exit(main(sys.argv[1:]))
