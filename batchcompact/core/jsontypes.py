"""The types of parsed JSON, the one place their `Any` is reasoned.

A session line, a usage record or a config file is whatever its writer put there: another program's JSON,
read by code that checks each value's type before it uses it (adapters/common/lines.py). Its values are
therefore `Any` to the type checker, on purpose; everything the readers turn them into is typed.
"""

from __future__ import annotations

from typing import Any, TypeAlias

# Any: a JSON value from a file we did not write; its reader checks the type before each use.
JsonValue: TypeAlias = Any
# A JSON object as `json.loads` gives it (also what we write back out: the writers keep unknown keys).
JsonObject: TypeAlias = dict[str, JsonValue]
