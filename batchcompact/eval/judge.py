"""The LLM half of the method (`--judge-model`): a model answers probe questions from the compacted context
alone, then grades each answer against the key taken from the full span.

One question per group of probes the cut has (Factory's probe types: artifact, recall, instruction
following, continuation): the files and code names the next turns needed, the commands and values they
needed, the user's rules, the user's requests. The grade is 0-5 on six dimensions (accuracy, context awareness, artifact
trail, completeness, continuity, instruction following), asked for as JSON. Every call goes through the
worker pool and the summary cache like a summary (`pipeline/model_calls.buy`): retried, redacted for remote models,
limited by the budget, and reused on a rerun, so the same inputs give the same grades.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from batchcompact.core.calls import Summarizer, SummaryCall, SummaryResult
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.serialize import serialize_conversation
from batchcompact.eval.probes import RULE, TASK, Probe
from batchcompact.eval.text import COMMAND, FILE, SYMBOL, VALUE

if TYPE_CHECKING:
    from batchcompact.eval.cuts import Cut
    from batchcompact.pipeline.state import RunState

# How eval buys model calls (`pipeline/model_calls.buy`), in eval's own names: a measure imports nothing of
# `summarize/` (tests/test_architecture.py), so the pool's settings are passed through, never named.
# The pool's `PoolSettings` (summarize/pool_settings.py): eval replaces its `max_cost_usd` and hands it to `buy`.
# Any: eval may not import `summarize/` to name it (a measure shares no code with what it measures)
PoolSettingsArg: TypeAlias = Any
Clock: TypeAlias = Callable[[], float]  # monotonic seconds (the pool's, injected by tests)
Sleep: TypeAlias = Callable[[float], Awaitable[None]]
# A scored row, its compacted context, its probes and its cut: what the judge answers and grades from.
JudgedContext: TypeAlias = "tuple[JsonObject, list[JsonObject], list[Probe], Cut]"

DIMENSIONS = ("accuracy", "context_awareness", "artifact_trail", "completeness", "continuity",
              "instruction_following")
JUDGE_COLUMNS = tuple(f"judge_{d}" for d in DIMENSIONS) + ("judge_overall", "judge_cost_usd")
ANSWER_TOKENS = 800
GRADE_TOKENS = 300
KEY_ITEMS = 40  # probes listed in one key at most (the first ones)

NAMES, COMMANDS = "names", "commands"
GROUPS = {NAMES: (FILE, SYMBOL), COMMANDS: (COMMAND, VALUE), RULE: (RULE,), TASK: (TASK,)}
QUESTIONS = {
    NAMES: "Which files and code names (functions, classes, variables) from earlier in this session will you "
    "need to continue the work? List them.",
    COMMANDS: "Which commands (to build, test or run the project) and which values (URLs, ports, versions, "
    "ids) from earlier in this session will you need? List them.",
    RULE: "Which rules or preferences has the user stated for this work?",
    TASK: "What has the user asked for in this session (every request), and what should be done next?",
}

ANSWER_SYSTEM = (
    "You are a coding agent resuming a session. All you know of it is the compacted context below (a summary "
    "of the earlier conversation and the most recent messages). Answer the question from that context alone, "
    "briefly and specifically; say 'unknown' for what the context does not tell."
)
GRADE_SYSTEM = (
    "You grade how well an agent that resumed a coding session from a compacted context answered a question "
    "about the earlier session. The key was taken from the full history. Score each dimension from 0 (absent "
    "or wrong) to 5 (complete and correct): accuracy (facts match the key), context_awareness (knows the state "
    "of the work), artifact_trail (files and changes named correctly), completeness (covers every item of the "
    "key), continuity (could continue the work without asking again), instruction_following (honours the "
    "user's stated rules). Reply with one JSON object only, e.g. "
    '{"accuracy": 3, "context_awareness": 4, "artifact_trail": 2, "completeness": 3, "continuity": 4, '
    '"instruction_following": 5}'
)


def answer_call(question: str, context: list[JsonObject]) -> SummaryCall:
    prompt = f"<context>\n{serialize_conversation(context)}\n</context>\n\nQuestion: {question}"
    return SummaryCall(kind="judge_answer", system_prompt=ANSWER_SYSTEM, user_prompt=prompt,
                       max_tokens=ANSWER_TOKENS)


def grade_call(question: str, key: str, answer: str) -> SummaryCall:
    prompt = f"Question: {question}\n\nKey (from the full history):\n{key}\n\nAnswer to grade:\n{answer}"
    return SummaryCall(kind="judge_grade", system_prompt=GRADE_SYSTEM, user_prompt=prompt, max_tokens=GRADE_TOKENS)


def answer_key(probes: list[Probe], group: str) -> str:
    items = [p.text for p in probes if p.kind in GROUPS[group]]
    more = f"\n- … and {len(items) - KEY_ITEMS} more" if len(items) > KEY_ITEMS else ""
    return "\n".join(f"- {item}" for item in items[:KEY_ITEMS]) + more


_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def parse_grade(text: str) -> dict[str, float | None]:
    """The six scores of a grade reply (clamped to 0..5); None for a dimension it does not give."""
    scores: dict[str, float | None] = dict.fromkeys(DIMENSIONS)
    for match in _OBJECT.finditer(text or ""):
        try:
            value = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(value, dict):
            for name in DIMENSIONS:
                score = value.get(name)
                if isinstance(score, (int, float)) and not isinstance(score, bool):
                    scores[name] = float(min(max(score, 0), 5))
            break
    return scores


class Judge:
    """Answers and grades with one model; fills each row's `judge_*` columns."""

    def __init__(self, summarizer: Summarizer, model: str) -> None:
        self.summarizer = summarizer
        self.model = model
        self.model_key = f"judge:{model}"

    def grade(self, contexts: list[JudgedContext], state: RunState | None, pool_settings: PoolSettingsArg, *,
              clock: Clock | None = None, sleep: Sleep | None = None) -> float:
        """Grade every scored row; returns what this run spent."""
        from batchcompact.pipeline.model_calls import buy

        questions: list[tuple[int, str]] = []  # (row index, kind)
        answer_jobs = []
        for index, (_, context, probes, _) in enumerate(contexts):
            for kind, members in GROUPS.items():
                if any(p.kind in members for p in probes):
                    answer_jobs.append((f"{index}:{kind}", [answer_call(QUESTIONS[kind], context)]))
                    questions.append((index, kind))
        answers, buyer = buy(self.summarizer, self.model_key, answer_jobs, state, pool_settings, clock=clock,
                             sleep=sleep)
        spent = sum(o.cost_usd for o in answers.values())
        if pool_settings.max_cost_usd is not None:  # the grades get what the answers left
            pool_settings = dataclasses.replace(pool_settings, max_cost_usd=max(pool_settings.max_cost_usd - spent, 0.0))
        costs: dict[int, float | None] = {}
        grade_jobs = []
        for index, kind in questions:
            outcome = answers.get(f"{index}:{kind}")
            if outcome is None or not outcome.ok:
                continue
            _add_cost(costs, index, buyer, outcome.results)
            probes = contexts[index][2]
            grade_jobs.append((f"{index}:{kind}", [
                grade_call(QUESTIONS[kind], answer_key(probes, kind), outcome.results[0].text)]))
        grades, buyer = buy(self.summarizer, self.model_key, grade_jobs, state, pool_settings, clock=clock,
                            sleep=sleep)
        spent += sum(o.cost_usd for o in grades.values())
        per_row: dict[int, list[dict[str, float | None]]] = {}
        for index, kind in questions:
            outcome = grades.get(f"{index}:{kind}")
            if outcome is None or not outcome.ok:
                continue
            _add_cost(costs, index, buyer, outcome.results)
            per_row.setdefault(index, []).append(parse_grade(outcome.results[0].text))
        for index, (row, _, _, _) in enumerate(contexts):
            grades_of_row = per_row.get(index, [])
            means = []
            for name in DIMENSIONS:
                values = [value for g in grades_of_row if (value := g[name]) is not None]
                row[f"judge_{name}"] = round(sum(values) / len(values), 3) if values else None
                if values:
                    means.append(sum(values) / len(values))
            row["judge_overall"] = round(sum(means) / len(means), 3) if means else None
            row["judge_cost_usd"] = costs.get(index)
        return spent


def _add_cost(costs: dict[int, float | None], index: int, buyer: object,
              results: list[SummaryResult | None]) -> None:
    as_paid = getattr(buyer, "as_paid", lambda r: r)
    for result in results:
        cost = as_paid(result).cost_usd if result is not None else None
        if cost is None or (index in costs and costs[index] is None):
            costs[index] = None
        else:
            costs[index] = round((costs.get(index) or 0.0) + cost, 6)
