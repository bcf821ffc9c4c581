"""Every registered agent's lazy references keep the contract `agents/contracts.py` types them with: each call the
Protocol allows binds to the agent's function (the type checker cannot see through the `"module:attr"` strings)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest

from batchcompact.adapters.common.usage_reader import UsageReader
from batchcompact.agents import AGENTS, contracts, load

# A declaration's field -> (Protocol, the methods a module must have; None: the reference is the callable itself)
FIELDS = {
    "reader": (contracts.SessionReader, None),
    "read_appended": (contracts.AppendedReader, None),
    "writer": (contracts.Writer, ("build_compaction", "verify")),
    "store": (contracts.Store, ("session_ids", "fingerprint", "write_session", "copy_session")),
    "trigger": (contracts.TriggerRule, None),
    "settings": (contracts.SettingsHook, None),
    "validate": (contracts.Validator, None),
    "usage": (UsageReader, None),
}
HANDOFF = ("build_handoff", "handoff_file_suffix", "verify_handoff")


def _calls(protocol_method: object) -> list[tuple[list[object], dict[str, object]]]:
    """The fewest and the most arguments a caller of the Protocol's method may pass."""
    params = list(inspect.signature(protocol_method).parameters.values())[1:]  # less `self`
    fewest: tuple[list[object], dict[str, object]] = ([], {})
    most: tuple[list[object], dict[str, object]] = ([], {})
    for p in params:
        required = p.default is inspect.Parameter.empty
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            most[0].append(object())
            if required:
                fewest[0].append(object())
        else:
            most[1][p.name] = object()
            if required:
                fewest[1][p.name] = object()
    return [fewest, most]


def _misfits(function: Callable[..., object], protocol_method: object) -> list[str]:
    signature = inspect.signature(function)
    out = []
    for args, kwargs in _calls(protocol_method):
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            out.append(f"{len(args)} positional, keywords {sorted(kwargs)}: {exc}")
    return out


def _references() -> list[tuple[str, str, str]]:
    return [(agent.name, field, getattr(agent, field)) for agent in AGENTS for field in FIELDS
            if getattr(agent, field)]


@pytest.mark.parametrize(("agent", "field", "reference"), _references())
def test_every_reference_keeps_its_contract(agent: str, field: str, reference: str) -> None:
    protocol, methods = FIELDS[field]
    target = load(reference)
    if methods is None:
        assert _misfits(target, protocol.__call__) == [], f"{agent}.{field} = {reference}"
        return
    for name in methods + (HANDOFF if field == "writer" and hasattr(target, "build_handoff") else ()):
        assert callable(getattr(target, name, None)), f"{agent}.{field} = {reference} has no {name}"
        method = getattr(contracts.HandoffWriter if name in HANDOFF else protocol, name)
        assert _misfits(getattr(target, name), method) == [], f"{agent}.{field} = {reference}: {name}"


def test_a_reader_that_digests_takes_digest() -> None:
    for agent in AGENTS:
        if agent.read_appended:
            assert _misfits(load(str(agent.reader)), contracts.DigestReader.__call__) == [], agent.name


def test_the_check_finds_a_misfit() -> None:
    def too_few(session: object) -> list[str]:
        return []

    assert _misfits(too_few, contracts.Writer.verify) != []
    assert _misfits(lambda original, written, plan: [], contracts.Writer.verify) == []
