"""Synthetic pi sessions (v3, or legacy v1), streamed line by line and deterministic from a seed.

Invariants of every generated file: entry ids are 8 lowercase hex and unique; each entry's parentId is
the previous leaf (or the parent of a branch point); entry timestamps strictly increase; each usable
assistant `usage.totalTokens` equals the system-prompt overhead plus the chars/4 estimate of the
context it was sent (summary + kept entries after a compaction), plus its own output.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import vocab
from .common import byte_length, dumps, iso_ms
from .pi_turns import MODELS, Model, TurnBuilder, estimate_tokens
from .text import get_pool


@dataclass
class PiSpec:
    """What to generate. Progress points (0..1) are fractions of `target_bytes` or `turns`."""

    seed: int = 1
    target_bytes: int | None = 200_000
    turns: int | None = None
    project: str | None = None  # a vocab.PROJECTS name; None picks one from the seed
    model: str = "claude-sonnet-4-5"
    thinking_level: str = "medium"
    model_switches: tuple[tuple[float, str], ...] = ()  # (progress, model name)
    branch_at: tuple[float, ...] = ()
    nested_branches: bool = True
    branch_summary: bool = False  # the first branch writes a branch_summary entry (/tree with summary)
    abandon_fork: bool = (
        False  # the last branch returns before the previous fork (a fork inside an abandoned subtree)
    )
    compaction_at: float | None = None
    auto_compact_tokens: int | None = None  # compact like pi whenever the context passes this
    keep_recent_tokens: int = 20_000
    huge_last_turn_tokens: int = 0
    legacy_v1: bool = False
    malformed: bool = False
    session_name: bool = True
    label_at: float | None = 0.5
    start: dt.datetime | None = None
    pool_seed: int | None = None  # text pool; defaults to seed


@dataclass
class PiResult:
    """Facts about a generated file, for tests, manifests and the corpus writer."""

    path: Path | None = None
    bytes: int = 0
    lines: int = 0
    entries: int = 0
    session_id: str = ""
    malformed_lines: list[int] = field(default_factory=list)
    branch_points: list[str] = field(default_factory=list)
    compactions: int = 0
    last_total_tokens: int = 0
    context_tokens: int = 0


@dataclass
class _PathRecord:
    entry_id: str | None
    line: int
    cum: int  # estimated context tokens after this entry
    is_user: bool


class PiSessionWriter:
    """Produces the lines of one session; read `.result` after `iter_lines()` is exhausted."""

    def __init__(self, spec: PiSpec) -> None:
        self.spec = spec
        self.rng = rng = random.Random(f"pi-{spec.seed}")
        self.project = vocab.project_named(spec.project) if spec.project else rng.choice(vocab.PROJECTS)
        self.model: Model = MODELS[spec.model]
        self.pool = get_pool(spec.pool_seed if spec.pool_seed is not None else spec.seed)
        self.turns = TurnBuilder(rng, self.pool, self.project, self.model.provider)
        start = spec.start or dt.datetime(2026, 9, 1, tzinfo=dt.UTC) + dt.timedelta(
            seconds=rng.randint(0, 80 * 86400)
        )
        self.ms = self.start_ms = int(start.timestamp() * 1000) + rng.randint(0, 999)
        self.session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.overhead = rng.randint(2600, 3600)  # system prompt + tool definitions
        self.ids: set[str] = set()
        self.leaf: str | None = None
        self.path: list[_PathRecord] = []
        self.cached = 0
        self.bytes = 0
        self.line_no = 0
        self.turn_index = 0
        self.min_branch_index = 0
        self.result = PiResult(session_id=self.session_id)
        self._pending_switches = sorted(spec.model_switches)
        self._pending_branches = sorted(spec.branch_at)
        self._compacted_once = False
        self._branch_targets: list[int] = []
        self._labelled = False

    # -- bookkeeping -----------------------------------------------------------------------
    @property
    def context(self) -> int:
        return self.path[-1].cum if self.path else 0

    def progress(self) -> float:
        spec = self.spec
        by_bytes = self.bytes / spec.target_bytes if spec.target_bytes else 0.0
        by_turns = self.turn_index / spec.turns if spec.turns else 0.0
        return max(by_bytes, by_turns)

    def _tick(self, low: int, high: int) -> int:
        self.ms += self.rng.randint(low, high)
        return self.ms

    def _new_id(self) -> str:
        while True:
            entry_id = f"{self.rng.getrandbits(32):08x}"
            if entry_id not in self.ids:
                self.ids.add(entry_id)
                return entry_id

    def _line(self, obj: dict | list | str) -> str:
        text = obj if isinstance(obj, str) else dumps(obj)
        self.line_no += 1
        self.bytes += byte_length(text) + 1
        return text + "\n"

    def _entry(self, kind: str, payload: dict, tokens: int = 0, is_user: bool = False) -> str:
        """Serialize one entry as the next child of the leaf and move the leaf to it."""
        stamp = iso_ms(self._tick(1, 40))
        if self.spec.legacy_v1:
            entry, entry_id = {"type": kind, "timestamp": stamp, **payload}, None
        else:
            entry_id = self._new_id()
            entry = {"type": kind, "id": entry_id, "parentId": self.leaf, "timestamp": stamp, **payload}
            self.leaf = entry_id
        line = self._line(entry)
        self.path.append(_PathRecord(entry_id, self.line_no, self.context + tokens, is_user))
        self.result.entries += 1
        return line

    def _message(self, message: dict) -> str:
        message["timestamp"] = self.ms
        return self._entry(
            "message", {"message": message}, estimate_tokens(message), message["role"] == "user"
        )

    def _usage(self, output: int) -> dict:
        model, rng = self.model, self.rng
        prompt = self.overhead + self.context
        if model.provider == "anthropic":
            fresh = rng.randint(1, 12)
            cache_read = min(self.cached, prompt - fresh)
            cache_write = prompt - fresh - cache_read
        else:
            cache_read = (min(self.cached, prompt) // 128) * 128
            fresh, cache_write = prompt - cache_read, 0
        self.cached = prompt + output
        usage = {"input": fresh, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write}
        if not self.spec.legacy_v1:
            usage["totalTokens"] = fresh + output + cache_read + cache_write
        cost = {
            "input": fresh * model.price_in,
            "output": output * model.price_out,
            "cacheRead": cache_read * model.price_cache_read,
            "cacheWrite": cache_write * model.price_cache_write,
        }
        cost["total"] = sum(cost.values())
        usage["cost"] = cost
        self.result.last_total_tokens = fresh + output + cache_read + cache_write
        return usage

    def _assistant(self, content: list[dict], stop: str, error: str | None = None) -> str:
        model = self.model
        self._tick(1500, 25_000)
        message = {
            "role": "assistant",
            "content": content,
            "api": model.api,
            "provider": model.provider,
            "model": model.model_id,
        }
        if stop in ("aborted", "error"):
            zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
            cost = {**zero, "total": 0}
            if not self.spec.legacy_v1:
                zero["totalTokens"] = 0
            message["usage"] = {**zero, "cost": cost}
        tokens = estimate_tokens(message)
        if stop not in ("aborted", "error"):
            message["usage"] = self._usage(tokens)
        message["stopReason"] = stop
        message["timestamp"] = self.ms - self.rng.randint(800, 1400)
        if error:
            message["errorMessage"] = error
        return self._entry("message", {"message": message}, tokens)

    # -- tree operations -------------------------------------------------------------------
    def _compaction(self) -> str:
        """A compaction entry keeping the recent turns from a user message about keep_recent_tokens back."""
        start = self.min_branch_index
        keep_index = None
        for index in range(len(self.path) - 1, start, -1):
            record = self.path[index]
            if record.is_user and self.context - self.path[index - 1].cum >= self.spec.keep_recent_tokens:
                keep_index = index
                break
        if keep_index is None:
            return ""
        kept = self.context - self.path[keep_index - 1].cum
        summary = self.turns.summary_text()
        read, modified = self.turns.file_lists()
        payload = {"summary": summary}
        if self.spec.legacy_v1:
            payload["firstKeptEntryIndex"] = self.path[keep_index].line - 1  # header is index 0
        else:
            payload["firstKeptEntryId"] = self.path[keep_index].entry_id
        payload["tokensBefore"] = self.overhead + self.context
        if not self.spec.legacy_v1:
            payload["details"] = {"readFiles": read, "modifiedFiles": modified}
            payload["fromHook"] = False
        self._tick(20_000, 90_000)
        line = self._entry("compaction", payload)
        self.path[-1].cum = estimate_tokens({"role": "compactionSummary", "summary": summary}) + kept
        self.min_branch_index = len(self.path)
        self.cached = self.overhead
        self.result.compactions += 1
        return line

    def _branch(self, with_summary: bool) -> Iterator[str]:
        """Go back to a user message 2-4 turns ago and continue from its parent; the old tail stays."""
        users = [i for i, r in enumerate(self.path) if r.is_user and i > self.min_branch_index]
        targets = self._branch_targets
        last = len(self._pending_branches) == 0
        if self.spec.abandon_fork and last and len(targets) >= 2:
            # back to before the previous branch point: the abandoned subtree then holds a fork itself
            inside = [i for i, r in enumerate(self.path) if r.is_user and targets[-2] <= i < targets[-1]]
            users = inside or users
        if not users:
            return
        target = users[-self.rng.randint(1, min(3, len(users)))]
        targets.append(target)
        del self.path[target:]
        self.leaf = self.path[-1].entry_id
        self.result.branch_points.append(self.leaf)
        if self.spec.nested_branches:
            self.min_branch_index = target
        self.cached = self.overhead
        if with_summary:
            summary = (
                "The user explored a different approach before coming back:\n\n"
                + self.turns.summary_text("branch")
            )
            read, modified = self.turns.file_lists()
            payload = {
                "fromId": self.leaf,
                "summary": summary,
                "details": {"readFiles": read, "modifiedFiles": modified},
                "fromHook": False,
            }
            yield self._entry(
                "branch_summary", payload, estimate_tokens({"role": "branchSummary", "summary": summary})
            )

    # -- the conversation ------------------------------------------------------------------
    def _turn(self, kind: str, huge_tokens: int = 0) -> Iterator[str]:
        rng = self.rng
        self._tick(15_000, 300_000)
        if rng.random() < 0.04 and not huge_tokens:
            yield self._message(self.turns.bash_execution())
            self._tick(5_000, 60_000)
        yield self._message(self.turns.user_message(kind))
        start_context = self.context
        steps = rng.choice((0, 1, 2, 3, 3, 4, 5, 6, 8, 12))
        step = 0
        while step < steps or (huge_tokens and self.context - start_context < huge_tokens):
            step += 1
            if rng.random() < 0.015 and not huge_tokens:
                yield self._assistant([], "error", rng.choice(vocab.ERROR_MESSAGES))
            content, results = self.turns.tool_step(big=bool(huge_tokens))
            if rng.random() < 0.02 and not huge_tokens:
                yield self._assistant(content[:1], "aborted", "Request was aborted")
                return
            yield self._assistant(content, "toolUse")
            for result in results:
                self._tick(50, 20_000)
                yield self._message(result)
        yield self._assistant(self.turns.final_content(), "stop")

    def _metadata(self, progress: float) -> Iterator[str]:
        spec = self.spec
        while self._pending_switches and progress >= self._pending_switches[0][0]:
            _, name = self._pending_switches.pop(0)
            self.model = MODELS[name]
            self.turns.provider = self.model.provider
            self.cached = 0
            if not spec.legacy_v1:
                yield self._entry(
                    "model_change", {"provider": self.model.provider, "modelId": self.model.model_id}
                )
        if (
            spec.label_at is not None
            and not self._labelled
            and progress >= spec.label_at
            and not spec.legacy_v1
        ):
            self._labelled = True
            users = [r for r in self.path[self.min_branch_index :] if r.is_user]
            if users:
                label = self.rng.choice(vocab.LABELS)
                yield self._entry("label", {"targetId": users[-1].entry_id, "label": label})

    def _malformed(self, kind: str) -> str:
        """A broken line: "torn" (crash mid-write, no newline at EOF), "invalid" JSON, or a JSON "array"."""
        partial = dumps(
            {
                "type": "message",
                "id": f"{self.rng.getrandbits(32):08x}",
                "parentId": self.leaf,
                "timestamp": iso_ms(self._tick(1, 40)),
                "message": {"role": "assistant", "content": self.turns.final_content()},
            }
        )
        self.result.malformed_lines.append(self.line_no + 1)
        if kind == "array":
            return self._line(dumps([{"type": "label", "targetId": self.leaf, "label": "oops"}]))
        text = partial[: len(partial) * 3 // 5]
        if kind == "torn":
            self.line_no += 1
            self.bytes += len(text.encode())
            return text
        return self._line(text)

    def iter_lines(self) -> Iterator[str]:
        """All lines of the file in order, each ending in a newline (except a torn last line)."""
        spec, model = self.spec, self.model
        header = {"type": "session"}
        if not spec.legacy_v1:
            header["version"] = 3
        header.update({"id": self.session_id, "timestamp": iso_ms(self.ms), "cwd": self.project.cwd})
        if spec.legacy_v1:
            header.update(
                {"provider": model.provider, "modelId": model.model_id, "thinkingLevel": spec.thinking_level}
            )
        yield self._line(header)
        if not spec.legacy_v1:
            yield self._entry("model_change", {"provider": model.provider, "modelId": model.model_id})
            yield self._entry("thinking_level_change", {"thinkingLevel": spec.thinking_level})
        injected: list[str] = []
        kind = "request"
        while True:
            progress = self.progress()
            pending_malformed = spec.malformed and len(injected) < 2
            if (progress >= 1.0 and not pending_malformed) or (not spec.target_bytes and not spec.turns):
                break
            yield from self._metadata(progress)
            if self._pending_branches and progress >= self._pending_branches[0] and not spec.legacy_v1:
                self._pending_branches.pop(0)
                first = not self.result.branch_points
                yield from self._branch(spec.branch_summary and first)
                kind = "retry"
            if spec.compaction_at is not None and not self._compacted_once and progress >= spec.compaction_at:
                self._compacted_once = True
                yield self._compaction()
            if spec.auto_compact_tokens and self.context + self.overhead > spec.auto_compact_tokens:
                yield self._compaction()
            if spec.malformed:
                for point, bad in ((0.3, "invalid"), (0.6, "array")):
                    if progress >= point and bad not in injected:
                        injected.append(bad)
                        yield self._malformed(bad)
                        break  # at most one per turn, so broken lines are never adjacent
            yield from self._turn(kind)
            kind = "correction" if self.rng.random() < 0.35 else "request"
            self.turn_index += 1
            if self.turn_index == 1 and spec.session_name and not spec.legacy_v1:
                yield self._entry("session_info", {"name": self.rng.choice(vocab.SESSION_NAMES)})
        if spec.huge_last_turn_tokens:
            yield from self._turn("request", huge_tokens=spec.huge_last_turn_tokens)
        if spec.malformed:
            yield self._malformed("torn")
        self.result.lines = self.line_no
        self.result.bytes = self.bytes
        self.result.context_tokens = self.context

    def file_name(self) -> str:
        """pi's file name: ISO creation time with ':' and '.' replaced, then the session id."""
        return iso_ms(self.start_ms).replace(":", "-").replace(".", "-") + f"_{self.session_id}.jsonl"


def iter_pi_lines(spec: PiSpec) -> Iterator[str]:
    """The lines of a generated pi session (see `PiSessionWriter`)."""
    return PiSessionWriter(spec).iter_lines()


def write_pi_session(path: str | Path, spec: PiSpec) -> PiResult:
    """Write one generated pi session to `path`, streaming; returns what was written."""
    writer = PiSessionWriter(spec)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        for line in writer.iter_lines():
            handle.write(line)
    writer.result.path = path
    return writer.result
