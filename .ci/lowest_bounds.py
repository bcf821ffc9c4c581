"""Print `name==version` for every dependency of pyproject.toml at its lowest allowed version (the `>=`
bound; an `==` pin as it is): what .ci/run installs to test the lower bounds, since pip resolves only to
the newest. A dependency without a lower bound is an error: its lowest version is untested."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
pins = []
for requirement in project["dependencies"]:
    name = re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0)
    bound = re.search(r"(>=|==)\s*([0-9][^,;\s]*)", requirement)
    if bound is None:
        sys.exit(f"pyproject.toml: {requirement!r} has no lower bound to test")
    pins.append(f"{name}=={bound.group(2)}")
print("\n".join(pins))
