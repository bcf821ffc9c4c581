"""OpenCode's (and Kilo's) own settings for a session read by read.py (`<opencode.db>#<session id>`, Kilo:
`<kilo.db>#<id>`). The window and the compaction settings come from the user's config, merged as OpenCode
merges it (later wins): `$XDG_CONFIG_HOME/opencode/{config.json, opencode.json}` (Kilo: `kilo/`,
`kilo.json` too), the file `$OPENCODE_CONFIG` (Kilo: `$KILO_CONFIG`) names, then the session's project
folder's `opencode.json` (Kilo: `kilo.json`). From it: the session model's
`provider.<provider>.models.<model>.limit.{context, input, output}` and `compaction.{auto, reserved,
preserve_recent_tokens}`. Plain JSON only: a `.jsonc` file or comments are not read (the price table's
window is used instead).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.adapters.common.lines import object_at
from batchcompact.adapters.common.settings_files import json_settings, positive
from batchcompact.adapters.opencode.extra import OpenCodeSessionExtra
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import Session

if TYPE_CHECKING:
    from batchcompact.core.planner import CompactionSettings


def _merge(base: JsonObject, over: JsonObject) -> JsonObject:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def config_files(agent: str, project: str | None) -> list[Path]:
    """The config files OpenCode (Kilo) reads, in merge order (existing or not)."""
    name = "kilo" if agent == "kilo" else "opencode"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    names = ("config.json", "opencode.json", "kilo.json") if name == "kilo" else ("config.json", "opencode.json")
    files = [Path(base) / name / n for n in names]
    named = os.environ.get("KILO_CONFIG" if name == "kilo" else "OPENCODE_CONFIG", "").strip()
    if named:
        files.append(Path(os.path.expanduser(named)))
    if project:
        files.extend(Path(project) / n for n in (("opencode.json", "kilo.json") if name == "kilo" else ("opencode.json",)))
    return files


def load_config(session: Session) -> JsonObject:
    config: JsonObject = {}
    for path in config_files(session.agent, (session.header or {}).get("cwd")):
        config = _merge(config, json_settings(path))
    return config


def model_limits(session: Session) -> JsonObject:
    """The session model's limits and OpenCode's compaction settings from the user's config: `context`,
    `input`, `output` (None where not set), `reserved`, `auto`, `preserve`."""
    config = load_config(session)
    model = OpenCodeSessionExtra.of(session).model or {}
    providers = config.get("provider")
    provider = providers.get(model.get("providerID")) if isinstance(providers, dict) else None
    models = provider.get("models") if isinstance(provider, dict) else None
    entry = models.get(model.get("modelID")) if isinstance(models, dict) else None
    limit = object_at(entry, "limit") if isinstance(entry, dict) else {}
    compaction = object_at(config, "compaction")
    reserved = compaction.get("reserved")
    preserve = compaction.get("preserve_recent_tokens")
    return {"context": positive(limit.get("context")), "input": positive(limit.get("input")),
            "output": positive(limit.get("output")),
            "reserved": int(reserved) if isinstance(reserved, int) and reserved >= 0 else None,
            "preserve": int(preserve) if isinstance(preserve, int) and preserve >= 0 else None,
            "auto": compaction.get("auto") is not False}


def with_opencode_settings(session: Session, settings: CompactionSettings,
                           fields: tuple[str, ...]) -> tuple[CompactionSettings, str | None]:
    """OpenCode's own settings for the settings nobody set: its kept tail (`compaction.preserve_recent_tokens`,
    else 25% of the usable window within 2,000..15,000; 15,000 when the window is the price table's); the
    skip reason when `compaction.auto` is false (--force compacts anyway, as /compact still does)."""
    from batchcompact.adapters.opencode.trigger import (
        OPENCODE_TAIL_MAX,
        opencode_tail_tokens,
        opencode_usable,
    )

    limits = session.agent_limits or {}
    if limits.get("auto") is False and not settings.force:
        return settings, "compaction.auto is false in the OpenCode config (--force compacts anyway)"
    if "keep_recent_tokens" not in fields:
        return settings, None
    if limits.get("preserve") is not None:
        keep = limits["preserve"]
    elif limits.get("context"):
        usable = opencode_usable(limits["context"], input_limit=limits.get("input"),
                                 output_limit=limits.get("output"), reserved=limits.get("reserved"))
        keep = opencode_tail_tokens(usable)
    else:
        keep = OPENCODE_TAIL_MAX
    return dataclasses.replace(settings, keep_recent_tokens=max(keep, 1)), None
