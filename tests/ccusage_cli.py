"""ccusage 20 (npm, its native build), the anchor the report's parity tests compare with: installed once into a
cache folder (`$BATCHCOMPACT_TEST_CACHE` or `~/.cache/batchcompact-tests`); the test is skipped with the reason
only when npm or the registry cannot be reached (failed then too when `CI` is set). conftest's `ccusage`
fixture gives it to the tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from agent_judges import install_lock
from conftest import unavailable

# `ccusage@20` resolves to 20.0.26, whose launcher needs @ccusage/ccusage-linux-x64@20.0.26, a package
# the registry does not have (the native packages stop at 20.0.24); then 20.0.24 is installed.
CCUSAGE_SPECS = ("ccusage@20", "ccusage@20.0.24")


def _cache_root() -> Path:
    base = os.environ.get("BATCHCOMPACT_TEST_CACHE") or Path.home() / ".cache" / "batchcompact-tests"
    return Path(base)


def _runs(binary: Path) -> str | None:
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _install_ccusage(npm: str, spec: str, prefix: Path, binary: Path) -> tuple[str | None, str | None]:
    """(the version of the ccusage at `prefix`, installing `spec` there first unless one runs; an error)."""
    version = _runs(binary) if binary.exists() else None  # installed while this process waited
    if version is not None:
        return version, None
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", spec],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return None, f"{spec}: npm install timed out"
    if done.returncode != 0:
        return None, f"{spec}: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    return _runs(binary), None


def installed_ccusage() -> tuple[Path, str]:
    """(the ccusage executable, its version), installed from npm into the cache folder on first use."""
    npm = shutil.which("npm")
    errors = []
    for spec in CCUSAGE_SPECS:
        prefix = _cache_root() / spec.replace("@", "-")
        binary = prefix / "node_modules" / ".bin" / "ccusage"
        version = _runs(binary) if binary.exists() else None
        if version is None and npm:
            with install_lock(prefix):  # pytest-xdist's other worker may be installing it now
                version, error = _install_ccusage(npm, spec, prefix, binary)
            if error:
                errors.append(error)
                continue
        if version:
            return binary, version
        errors.append(f"{spec}: installed launcher does not run (no native build for this platform)")
    if not npm:
        unavailable("npm is not installed, so ccusage cannot be fetched")
    if all("ENOTFOUND" in e or "EAI_AGAIN" in e or "ECONNREFUSED" in e or "timed out" in e for e in errors):
        unavailable("the npm registry cannot be reached: " + "; ".join(errors))
    raise AssertionError("could not install a working ccusage 20: " + "; ".join(errors))
