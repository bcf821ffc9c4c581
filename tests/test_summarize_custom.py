"""Custom summarizers (module:callable, entry points), the factory and the click option sets."""

from __future__ import annotations

import asyncio
import sys
import types

import click
import pytest
from click.testing import CliRunner
from code_helpers import unwrap

from batchcompact.core.calls import HISTORY, SummaryCall
from batchcompact.errors import UsageError
from batchcompact.summarize import (
    BuiltinSummarizer,
    Cancel,
    SummaryCancelled,
    build_summarizer,
    load_summarizer,
)
from batchcompact.summarize.overflow import OverflowSummarizer

CALL = SummaryCall(
    kind=HISTORY,
    system_prompt="s",
    user_prompt="u",
    max_tokens=100,
    messages=({"role": "user", "content": "hi"},),
    previous_summary="prev",
)


@pytest.fixture
def hook_module(monkeypatch):
    module = types.ModuleType("my_hooks")

    def sync_hook(call):
        return f"## Goal\nhook saw {len(call.messages)} message(s), previous={call.previous_summary}"

    async def async_hook(call):
        return "## Goal\nasync hook"

    def cancel_hook(call):
        return Cancel("user hook said no")

    def bad_hook(call):
        return 42

    class ObjectHook:
        name = "object-hook"

        async def summarize(self, call):
            return "## Goal\nobject hook"

    module.sync_hook, module.async_hook, module.cancel_hook = sync_hook, async_hook, cancel_hook
    module.bad_hook, module.ObjectHook = bad_hook, ObjectHook
    monkeypatch.setitem(sys.modules, "my_hooks", module)
    return module


@pytest.mark.parametrize(
    "spec,text",
    [
        ("my_hooks:sync_hook", "## Goal\nhook saw 1 message(s), previous=prev"),
        ("my_hooks:async_hook", "## Goal\nasync hook"),
        ("my_hooks:ObjectHook", "## Goal\nobject hook"),
    ],
)
def test_hooks_return_summaries_flagged_from_hook(hook_module, spec, text):
    result = asyncio.run(load_summarizer(spec).summarize(CALL))
    assert result.text == text and result.from_hook and result.cost_usd == 0.0


def test_cancel_raises_summary_cancelled(hook_module):
    with pytest.raises(SummaryCancelled, match="user hook said no"):
        asyncio.run(load_summarizer("my_hooks:cancel_hook").summarize(CALL))


def test_bad_return_value_fails_the_session(hook_module):
    from batchcompact.summarize import SessionFatalError

    with pytest.raises(SessionFatalError, match="expected a summary string"):
        asyncio.run(load_summarizer("my_hooks:bad_hook").summarize(CALL))


@pytest.mark.parametrize(
    "spec,message",
    [
        ("no_such_module_xyz:f", "cannot import"),
        ("my_hooks:missing", "has no attribute"),
        ("not-installed-name", "use module:callable"),
    ],
)
def test_bad_specs_are_usage_errors(hook_module, spec, message):
    with pytest.raises(UsageError, match=message):
        load_summarizer(spec)


def test_entry_point(monkeypatch, hook_module):
    from importlib.metadata import EntryPoint

    import batchcompact.summarize.custom as custom

    ep = EntryPoint(name="mine", value="my_hooks:sync_hook", group=custom.ENTRY_POINT_GROUP)
    monkeypatch.setattr(
        custom, "entry_points", lambda group: [ep] if group == custom.ENTRY_POINT_GROUP else []
    )
    result = asyncio.run(load_summarizer("mine").summarize(CALL))
    assert result.from_hook and "hook saw" in result.text


def test_build_summarizer(hook_module):
    assert isinstance(build_summarizer(None), BuiltinSummarizer)
    assert isinstance(build_summarizer(" Builtin "), BuiltinSummarizer)
    remote = build_summarizer("openai/gpt-4o-mini", api_key="sk-secret-value-123", timeout=3)
    assert isinstance(remote, OverflowSummarizer) and remote.context_window == 128000
    assert "sk-secret-value-123" not in repr(unwrap(remote)) and unwrap(remote).timeout == 3
    hook = build_summarizer("openai/gpt-4o-mini", summarizer_spec="my_hooks:sync_hook")
    assert hook.name == "my_hooks:sync_hook"


def test_click_options_names_and_secrecy(monkeypatch):
    from batchcompact.cli.summarize_options import pool_options, pool_settings_from, summarizer_options

    seen = {}

    @click.command()
    @summarizer_options
    @pool_options
    def cmd(**kwargs):
        seen.update(kwargs)

    runner = CliRunner()
    result = runner.invoke(
        cmd,
        [
            "--api-key",
            "sk-very-secret-1234567890abcdefgh",
            "--rpm",
            "60",
            "--concurrency",
            "4",
            "--no-redact",
        ],
    )
    assert result.exit_code == 0, result.output
    assert seen == {
        "model": "builtin",
        "api_base": None,
        "api_key": "sk-very-secret-1234567890abcdefgh",
        "timeout": 600.0,
        "summarizer": None,
        "check": False,
        "no_redact": True,
        "concurrency": 4,
        "rpm": 60.0,
        "tpm": None,
        "max_attempts": 6,
    }
    help_text = runner.invoke(cmd, ["--help"]).output
    assert "BATCHCOMPACT_MODEL" in help_text and "sk-very-secret" not in help_text
    monkeypatch.setenv("BATCHCOMPACT_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("BATCHCOMPACT_API_KEY", "env-key-value")
    runner.invoke(cmd, [])
    assert seen["model"] == "openai/gpt-4o-mini" and seen["api_key"] == "env-key-value"
    assert runner.invoke(cmd, ["--concurrency", "0"]).exit_code == 2
    settings = pool_settings_from(concurrency=4, rpm=60.0, redact=False)
    assert settings.concurrency == 4 and settings.rpm == 60.0 and settings.redact is False
