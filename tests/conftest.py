"""Shared test fixtures: the outside corpus in ../shared/fixtures and a loopback-only network guard."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_sessions"
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


def fixture_path(*parts: str) -> Path:
    """A file under ../shared/fixtures, or skip the test when that folder is absent."""
    path = SHARED_FIXTURES.joinpath(*parts)
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED_FIXTURES}")
    if not path.exists():
        pytest.skip(f"fixture {path} is missing")
    return path


@pytest.fixture
def fixtures_dir() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


def _is_loopback(address) -> bool:
    if isinstance(address, tuple):
        host = address[0]
    else:
        return True  # unix sockets
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    if not _is_loopback(address):
        raise RuntimeError(f"test tried to open a connection outside 127.0.0.1: {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if not _is_loopback(address):
        raise RuntimeError(f"test tried to open a connection outside 127.0.0.1: {address!r}")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """Fail any test that opens a connection to anything but the loopback interface."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    yield
