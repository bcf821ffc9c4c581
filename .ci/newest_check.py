"""Fail when the CI venv holds an older version of a direct dependency than pyproject allows and the index
serves: CI tests what a new user's `pip install` gets today, never what an earlier run left behind.

Run inside the CI venv after the install: `pip list --outdated` (the index's newest of each installed
package) against every requirement of `[project] dependencies` and the `test` and `ray` extras."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
wanted = [*project["dependencies"], *project["optional-dependencies"]["test"],
          *project["optional-dependencies"]["ray"]]
requirements = {r.name.lower().replace("_", "-"): r for r in map(Requirement, wanted)}
listed = subprocess.run([sys.executable, "-m", "pip", "list", "--outdated", "--format", "json"],
                        capture_output=True, text=True, check=True).stdout
stale = []
for package in json.loads(listed):
    requirement = requirements.get(package["name"].lower().replace("_", "-"))
    if requirement is not None and Version(package["latest_version"]) in requirement.specifier:
        stale.append(f"{package['name']} {package['version']} (the index has {package['latest_version']}, "
                     f"pyproject allows {requirement.specifier})")
if stale:
    sys.exit("CI: not the newest versions pyproject allows: " + "; ".join(stale))
print(f"CI: the newest allowed version of each of {len(requirements)} direct dependencies is installed")
