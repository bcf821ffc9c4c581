"""This machine's name and id in usage reports and exports (stdlib only).

The name is what `--by machine` shows: `--machine`, else the config file's `machine`, else the host name.
The id tells two machines of the same name apart (the report warns when two exports name one machine
with two ids): a hash of the system's `/etc/machine-id` (systemd; `/var/lib/dbus/machine-id`), so the id
itself is not published, else a random id kept in batchcompact's state folder; `$BATCHCOMPACT_MACHINE_ID`
overrides both.
"""

from __future__ import annotations

import hashlib
import os
import socket
import uuid
from pathlib import Path

from batchcompact.folders import state_folder

SYSTEM_IDS = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def machine_name(given: str | None) -> str:
    """`--machine` (or the config file's), else the host name (without its domain)."""
    name = (given or "").strip() or socket.gethostname().split(".", 1)[0].strip()
    return name or "unknown"


ID_ENV = "BATCHCOMPACT_MACHINE_ID"


def machine_id() -> str:
    """A stable id of this machine: `$BATCHCOMPACT_MACHINE_ID` (containers and cloned images that share one
    /etc/machine-id), else a hash of the system's id (16 hex digits), else one kept in the state folder."""
    given = os.environ.get(ID_ENV, "").strip()
    if given:
        return given
    for candidate in SYSTEM_IDS:
        try:
            raw = Path(candidate).read_bytes().strip()
        except OSError:
            continue
        if raw:
            return hashlib.sha256(b"batchcompact machine:" + raw).hexdigest()[:16]
    return _kept_id()


def _kept_id() -> str:
    path = state_folder() / "machine-id"
    try:
        kept = path.read_text().strip()
        if kept:
            return kept
    except OSError:
        pass
    made = uuid.uuid4().hex[:16]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".machine-id.{os.getpid()}")
        tmp.write_text(made + "\n")
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable state folder: an id for this run only
    return made
