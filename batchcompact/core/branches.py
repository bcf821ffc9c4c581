"""Branch summaries: pi's branch summarization (reference section 7) as pure planning and applying.

An abandoned branch is a leaf that is not on the active path, with the entries from that leaf back to its
deepest common ancestor with the active path (exclusive). For each one `plan_branch_summary` returns a
`BranchPlan` (one `SummaryCall` of kind `branch`) or a `BranchSkip` with a reason; the summary entries are
then appended as a chain on the active path. No I/O, no model call, no clock. Choices (docs/branches.md):

* `fromId` is the abandoned leaf's id (what pi's docs say; pi's code writes the new position). A rerun
  finds a `branch_summary` whose `fromId` is the leaf anywhere in the file and skips the branch, so
  applying twice writes nothing new. A summary pi itself wrote when leaving a branch is recognised too.
* Nested branches: every abandoned leaf is its own branch, walked from its own leaf to its common
  ancestor with the *active* path, as pi walks it. Two branches that fork off each other share their
  leading entries (`shared_entries`), which are summarized in both.
* Order with compaction: the summaries are appended first (parent = the current leaf, then each the
  previous summary), and the compaction is planned over the path that ends with them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from batchcompact.core.apply import new_entry_id
from batchcompact.core.calls import BRANCH, SummaryCall
from batchcompact.core.context import compaction_message, convert_to_llm, entry_to_message, parse_timestamp_ms
from batchcompact.core.entries import Entry
from batchcompact.core.fileops import FileOps, FileTools
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    SUMMARIZATION_SYSTEM_PROMPT,
    build_branch_summary_prompt,
    format_file_operations,
)
from batchcompact.core.serialize import serialize_conversation
from batchcompact.core.tokens import estimate_tokens
from batchcompact.core.tree import SessionTree

DEFAULT_BRANCH_RESERVE_TOKENS = 16384
DEFAULT_CONTEXT_WINDOW = 128000  # pi: `model.contextWindow || 128000`
BRANCH_SUMMARY_MAX_TOKENS = 2048  # pi's fixed maxTokens for a branch summary
SUMMARY_BUDGET_SLACK = 0.9  # a summary entry past the budget is still taken while total < 0.9 x budget


@dataclass(frozen=True)
class BranchSettings:
    reserve_tokens: int = DEFAULT_BRANCH_RESERVE_TOKENS
    min_branch_tokens: int = 0
    context_window: int | None = None  # overrides the model's window
    default_context_window: int = DEFAULT_CONTEXT_WINDOW  # when neither the override nor the model knows
    instructions: str | None = None
    max_tokens: int = BRANCH_SUMMARY_MAX_TOKENS

    def window(self, context_window: int | None) -> int:
        return self.context_window or context_window or self.default_context_window

    def budget(self, context_window: int | None) -> int:
        """Tokens of branch content to send: window - reserve (<= 0 means no limit, as in pi)."""
        return self.window(context_window) - self.reserve_tokens


@dataclass(frozen=True)
class AbandonedBranch:
    """A leaf off the active path and the entries that only it (and branches nested in it) hold.

    `entries` run from the first entry after `ancestor` to `leaf`, oldest first; `ancestor` is the deepest
    entry shared with the active path, None when the branch shares no entry with it (a separate root).
    `shared_entries` counts the leading entries that another abandoned branch holds too (nested branches).
    """

    leaf: Entry
    ancestor: Entry | None
    entries: tuple[Entry, ...]
    tokens: int
    shared_entries: int = 0

    @property
    def leaf_id(self) -> str:
        return self.leaf.id  # leaves always have an id (tree.leaves)

    @property
    def ancestor_id(self) -> str | None:
        return self.ancestor.id if self.ancestor is not None else None

    @property
    def entry_count(self) -> int:
        return len(self.entries)


@dataclass(frozen=True)
class BranchPlan:
    """One branch summary to make: the call, and what its entry will record."""

    branch: AbandonedBranch
    from_id: str
    call: SummaryCall
    messages: int  # messages sent (tool results never are)
    total_tokens: int  # pi's totalTokens: the estimate of the messages sent
    budget: int
    truncated: bool  # older messages were left out to stay within the budget
    read_files: list[str]
    modified_files: list[str]
    context_window: int

    @property
    def leaf_id(self) -> str:
        return self.branch.leaf_id

    @property
    def ancestor_id(self) -> str | None:
        return self.branch.ancestor_id

    @property
    def calls(self) -> list[SummaryCall]:
        return [self.call]


@dataclass(frozen=True)
class BranchSkip:
    """No summary for this branch, and why (`summary_id`: the summary that already covers it)."""

    branch: AbandonedBranch
    reason: str
    summary_id: str | None = None

    @property
    def leaf_id(self) -> str:
        return self.branch.leaf_id


@dataclass(frozen=True)
class BranchSummaryResult:
    """A plan and the model's text for it, ready to become an entry."""

    plan: BranchPlan
    text: str
    usage: JsonObject | None = None
    from_hook: bool = False


def _size_message(entry: Entry) -> JsonObject | None:
    """An entry's message for sizing a branch: as the context maps it, compactions included."""
    return compaction_message(entry) if entry.type == "compaction" else entry_to_message(entry)


def find_abandoned_branches(tree: SessionTree) -> list[AbandonedBranch]:
    """Every leaf not on the active path (nor the history a compact boundary on it continues:
    `SessionTree.history`), in file order, with its entries back to that path.

    Invariants: a branch never contains an entry of the active path; its entries are chronological and
    end at its leaf; the walk does not stop at compaction entries (pi's collectEntriesForBranchSummary).
    """
    if tree.leaf is None:
        return []
    on_active = {id(e) for e in tree.history()}  # a compacted history is not a branch the user left
    found: list[tuple[Entry, Entry | None, list[Entry]]] = []
    for leaf in tree.abandoned_leaves():
        path = tree.path(leaf)
        start = 0
        for index in range(len(path) - 1, -1, -1):
            if id(path[index]) in on_active:
                start = index + 1
                break
        ancestor = path[start - 1] if start > 0 else None
        found.append((leaf, ancestor, path[start:]))
    holders = Counter(id(e) for _, _, entries in found for e in entries)
    out = []
    for leaf, ancestor, entries in found:
        tokens = 0
        for entry in entries:
            message = _size_message(entry)
            if message is not None:
                tokens += estimate_tokens(message)
        shared = sum(1 for e in entries if holders[id(e)] > 1)
        out.append(AbandonedBranch(leaf, ancestor, tuple(entries), tokens, shared))
    return out


def branch_entry_message(entry: Entry) -> JsonObject | None:
    """pi's getMessageFromEntry for branches: tool results give nothing; summaries always map."""
    kind = entry.type
    if kind == "message":
        message = entry.message
        if message is None or message.get("role") == "toolResult":
            return None
        return message
    if kind == "custom_message":
        return entry_to_message(entry)
    if kind == "branch_summary":
        # Unlike the context rebuild, pi maps a branch summary here even when its text is empty.
        return {
            "role": "branchSummary",
            "summary": entry.data.get("summary") or "",
            "fromId": entry.data.get("fromId"),
            "timestamp": parse_timestamp_ms(entry.data.get("timestamp")),
        }
    if kind == "compaction":
        return compaction_message(entry)
    return None


def prepare_branch_entries(
    entries: list[Entry] | tuple[Entry, ...], token_budget: int = 0, *, file_tools: FileTools
) -> tuple[list[JsonObject], FileOps, int]:
    """pi's prepareBranchEntries: (messages oldest first, file ops, their estimated tokens).

    Pass 1 takes file ops from every non-hook `branch_summary`'s details. Pass 2 walks newest to oldest,
    taking each message's file ops before the budget check (so a message that does not fit still counts
    for file ops). When `token_budget > 0` and a message would pass it, the walk stops; a compaction or
    branch summary is still taken first while the total is below 0.9 x budget.
    """
    file_ops = FileOps(file_tools)
    for entry in entries:
        if entry.type == "branch_summary" and not entry.data.get("fromHook") and entry.data.get("details"):
            file_ops.add_details(entry.data.get("details"))
    messages: list[JsonObject] = []
    total = 0
    for entry in reversed(entries):
        message = branch_entry_message(entry)
        if message is None:
            continue
        file_ops.add_message(message)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.type in ("compaction", "branch_summary") and total < token_budget * SUMMARY_BUDGET_SLACK:
                messages.append(message)
                total += tokens
            break
        messages.append(message)
        total += tokens
    messages.reverse()
    return messages, file_ops, total


def find_summarized_leaves(tree: SessionTree) -> dict[str, Entry]:
    """Leaf id -> the `branch_summary` that already covers that leaf's branch.

    Two shapes count: ours (and pi's docs'), `fromId` = the abandoned leaf, found anywhere in the file;
    and pi's code's, `fromId` = its own parent (or "root" with no parent), written right after leaving
    the branch: its file predecessor is the old leaf, and its parent lies on that leaf's path.
    """
    covered: dict[str, Entry] = {}
    leaf_ids = {e.id for e in tree.leaves()}
    for index, entry in enumerate(tree.entries):
        if entry.type != "branch_summary":
            continue
        from_id = entry.data.get("fromId")
        if isinstance(from_id, str) and from_id in leaf_ids:
            covered.setdefault(from_id, entry)
            continue
        pi_shape = from_id == entry.parent_id or (from_id == "root" and entry.parent_id is None)
        if not pi_shape or index == 0:
            continue
        previous = tree.entries[index - 1]
        if previous.id not in leaf_ids:
            continue
        if entry.parent_id is None or any(e.id == entry.parent_id for e in tree.path(previous)):
            covered.setdefault(previous.id, entry)
    return covered


def plan_branch_summary(
    tree: SessionTree,
    branch: AbandonedBranch,
    settings: BranchSettings,
    context_window: int | None = None,
    *,
    summarized: Mapping[str, Entry] | None = None,
    file_tools: FileTools,
) -> BranchPlan | BranchSkip:
    """Plan the summary of one abandoned branch, or say why there is none.

    `summarized` is `find_summarized_leaves(tree)`, computed here when not given; `file_tools`: the tools
    whose calls name files (`batchcompact.agents.file_tools()`). Unlike pi, a branch
    with nothing to summarize is skipped instead of getting a "No content to summarize" entry.
    """
    if summarized is None:
        summarized = find_summarized_leaves(tree)
    existing = summarized.get(branch.leaf_id)
    if existing is not None:
        where = f" on line {existing.line}" if existing.line is not None else ""
        return BranchSkip(branch, f"already summarized (branch_summary {existing.id}{where})", existing.id)

    window = settings.window(context_window)
    budget = settings.budget(context_window)
    messages, file_ops, total = prepare_branch_entries(branch.entries, budget, file_tools=file_tools)
    if not messages:
        return BranchSkip(branch, "nothing to summarize (no messages on the branch)")
    llm = convert_to_llm(messages)
    conversation = serialize_conversation(llm)
    if not conversation:
        return BranchSkip(branch, "nothing to summarize (the branch has no text)")
    if branch.tokens < settings.min_branch_tokens:
        return BranchSkip(branch, f"below min_branch_tokens ({branch.tokens} < {settings.min_branch_tokens})")

    available = sum(1 for e in branch.entries if branch_entry_message(e) is not None)
    read_files, modified_files = file_ops.lists()
    call = SummaryCall(
        kind=BRANCH,
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        user_prompt=build_branch_summary_prompt(conversation, settings.instructions, budget=settings.max_tokens),
        max_tokens=settings.max_tokens,
        messages=tuple(llm),
        instructions=settings.instructions,
        meta={"leaf_id": branch.leaf_id, "ancestor_id": branch.ancestor_id},
    )
    return BranchPlan(
        branch=branch,
        from_id=branch.leaf_id,
        call=call,
        messages=len(messages),
        total_tokens=total,
        budget=budget,
        truncated=len(messages) < available,
        read_files=read_files,
        modified_files=modified_files,
        context_window=window,
    )


def plan_all_branches(
    tree: SessionTree, settings: BranchSettings, context_window: int | None = None, *, file_tools: FileTools
) -> list[BranchPlan | BranchSkip]:
    """One plan or skip per abandoned branch, in the file order of the leaves (the order to apply)."""
    summarized = find_summarized_leaves(tree)
    return [
        plan_branch_summary(tree, branch, settings, context_window, summarized=summarized, file_tools=file_tools)
        for branch in find_abandoned_branches(tree)
    ]


def compose_branch_summary(plan: BranchPlan, text: str) -> str:
    """The stored summary: pi's preamble + the model's text + the file-operation tags."""
    return BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(plan.read_files, plan.modified_files)


def build_branch_summary_entry(
    plan: BranchPlan,
    text: str,
    *,
    parent_id: str | None,
    existing_ids: Iterable[str],
    session_id: str,
    timestamp: str,
    usage: JsonObject | None = None,
    from_hook: bool = False,
) -> JsonObject:
    """The v3 `branch_summary` entry. Field order follows pi's `branchWithSummary`; `usage` comes last.

    The id derives from the session and the abandoned leaf, so a rerun of the same apply writes the same id.
    """
    entry_id = new_entry_id(f"{session_id}\x00{plan.leaf_id}\x00branch_summary", set(existing_ids))
    entry: JsonObject = {
        "type": "branch_summary",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": timestamp,
        "fromId": plan.from_id,
        "summary": compose_branch_summary(plan, text),
        "details": {"readFiles": list(plan.read_files), "modifiedFiles": list(plan.modified_files)},
        "fromHook": from_hook,
    }
    if usage is not None:
        entry["usage"] = usage
    return entry


def build_branch_summary_chain(
    results: Iterable[BranchSummaryResult],
    *,
    leaf_id: str | None,
    existing_ids: Iterable[str],
    session_id: str,
    timestamp: str,
) -> list[JsonObject]:
    """The entries for several summaries, chained on the active path in the given order.

    The first's parent is the current leaf `leaf_id`, each next one's parent the previous summary, so the
    last summary becomes the new leaf; the compaction, if any, is planned over that new path afterwards.
    """
    used = set(existing_ids)
    parent = leaf_id
    out = []
    for result in results:
        entry = build_branch_summary_entry(
            result.plan,
            result.text,
            parent_id=parent,
            existing_ids=used,
            session_id=session_id,
            timestamp=timestamp,
            usage=result.usage,
            from_hook=result.from_hook,
        )
        used.add(entry["id"])
        parent = entry["id"]
        out.append(entry)
    return out
