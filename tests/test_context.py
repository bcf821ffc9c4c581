"""Tree, context rebuild, wrapper texts, token estimates and serialization (reference 1.3, 3.1, 4, 6)."""

from __future__ import annotations

from code_helpers import common_ancestor
from factories import Builder

from batchcompact.agents import file_tools
from batchcompact.core.context import (
    bash_execution_to_text,
    build_session_context,
    convert_message,
    convert_to_llm,
)
from batchcompact.core.entries import Entry
from batchcompact.core.fileops import FileOps
from batchcompact.core.prompts import format_file_operations
from batchcompact.core.serialize import serialize_conversation
from batchcompact.core.tokens import estimate_context_tokens, estimate_tokens
from batchcompact.core.tree import SessionTree


def test_tree_leaf_path_branches_and_common_ancestor():
    b = Builder()
    root = b.user("root")
    a1 = b.assistant("a1")
    u2 = b.user("branch one")
    b.assistant("b1 reply")
    abandoned = b.user("b1 leaf")
    b.user("branch two", parent=a1)
    nested = b.assistant("nested", parent=u2)
    last = b.user("active leaf", parent=a1)
    tree = SessionTree(b.objects())
    assert tree.leaf.id == last
    assert [e.id for e in tree.path()] == [root, a1, last]
    leaves = {e.id for e in tree.abandoned_leaves()}
    assert abandoned in leaves and nested in leaves and last not in leaves
    assert common_ancestor(tree, abandoned, last).id == a1
    assert common_ancestor(tree, nested, abandoned).id == u2
    other_root = b.user("second root", parent=None)
    tree = SessionTree(b.objects())
    assert common_ancestor(tree, other_root, abandoned) is None


def test_leaf_is_last_line_even_when_metadata():
    b = Builder()
    b.user("u")
    label = b.add("label", targetId="00000001", label="x")
    tree = SessionTree(b.objects())
    assert tree.leaf.id == label
    assert build_session_context(tree.path()).messages[0].message["content"] == "u"


def test_compaction_context_keeps_from_first_kept_entry():
    b = Builder()
    b.user("old")
    b.assistant("old reply")
    kept = b.user("kept")
    b.assistant("kept reply")
    b.add("compaction", summary="SUM", firstKeptEntryId=kept, tokensBefore=10)
    b.user("after")
    ctx = build_session_context(SessionTree(b.objects()).path())
    roles = [m.message["role"] for m in ctx.messages]
    assert roles == ["compactionSummary", "user", "assistant", "user"]
    assert ctx.messages[0].line is None and ctx.messages[1].line is not None
    assert ctx.stale_count == 3
    llm = convert_message(ctx.messages[0].message)
    assert llm["content"][0]["text"] == (
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nSUM\n</summary>"
    )


def test_only_latest_compaction_counts_and_missing_first_kept_keeps_nothing():
    b = Builder()
    b.user("a")
    b.add("compaction", summary="ONE", firstKeptEntryId="00000001", tokensBefore=1)
    b.user("b")
    b.add("compaction", summary="TWO", firstKeptEntryId="ffffffff", tokensBefore=1)
    b.user("c")
    ctx = build_session_context(SessionTree(b.objects()).path())
    assert [m.message.get("summary") or m.message.get("content") for m in ctx.messages] == ["TWO", "c"]


def test_branch_summary_and_custom_message_wrappers():
    b = Builder()
    b.user("u")
    b.add("branch_summary", fromId="00000001", summary="BR")
    b.add("branch_summary", fromId="00000001", summary="")  # empty: skipped
    b.add("custom_message", customType="note", content="plain", display=True)
    b.add("custom", customType="state", data={"x": 1})  # never in context
    ctx = build_session_context(SessionTree(b.objects()).path())
    llm = convert_to_llm([m.message for m in ctx.messages])
    assert [m["role"] for m in llm] == ["user", "user", "user"]
    assert llm[1]["content"][0]["text"] == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nBR</summary>"
    )
    assert llm[2]["content"] == [{"type": "text", "text": "plain"}]


def test_bash_execution_text_and_exclusion():
    base = {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 0, "cancelled": False,
            "truncated": False}
    assert bash_execution_to_text(base) == "Ran `ls`\n```\na\nb\n```"
    assert bash_execution_to_text({**base, "output": "", "exitCode": 2}) == "Ran `ls`\n(no output)\n\nCommand exited with code 2"
    assert bash_execution_to_text({**base, "cancelled": True}).endswith("\n\n(command cancelled)")
    assert bash_execution_to_text({**base, "truncated": True, "fullOutputPath": "/tmp/o"}).endswith(
        "\n\n[Output truncated. Full output: /tmp/o]"
    )
    assert convert_message({**base, "excludeFromContext": True}) is None


def test_token_estimates_match_the_reference_checks():
    assert estimate_tokens({"role": "user", "content": "abcde"}) == 2
    assistant = {"role": "assistant", "content": [
        {"type": "text", "text": "abcd"}, {"type": "thinking", "thinking": "efgh"},
        {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "a.ts"}}]}
    assert estimate_tokens(assistant) == 7
    tool = {"role": "toolResult", "content": [{"type": "text", "text": "abcd"}, {"type": "image", "data": "", "mimeType": "x"}]}
    assert estimate_tokens(tool) == 1201
    # JavaScript lengths: an emoji is two UTF-16 units.
    assert estimate_tokens({"role": "user", "content": "😀😀"}) == 1
    assert estimate_tokens({"role": "bashExecution", "command": "ls", "output": "123456", "excludeFromContext": True}) == 2


def test_context_estimate_reference_example():
    messages = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": [], "stopReason": "stop",
         "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}},
        {"role": "user", "content": "abcdefgh"},
        {"role": "assistant", "content": [{"type": "text", "text": "zz"}], "stopReason": "aborted",
         "usage": {"input": 999, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 999}},
    ]
    est = estimate_context_tokens(messages)
    assert (est.tokens, est.usage_tokens, est.trailing_tokens, est.last_usage_index) == (113, 110, 3, 1)
    stale = estimate_context_tokens(messages, usage_from=2)
    assert stale.last_usage_index is None and stale.tokens == sum(estimate_tokens(m) for m in messages)


def test_serialization_labels_calls_and_truncation():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "fix "}, {"type": "image"}, {"type": "text", "text": "it"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t1"}, {"type": "thinking", "thinking": "t2"},
            {"type": "text", "text": "on it"},
            {"type": "toolCall", "name": "read", "arguments": {"path": "a.ts"}},
            {"type": "toolCall", "name": "bash", "arguments": {"command": "ls -la", "opts": {"x": [1, "é"]}}}]},
        {"role": "toolResult", "content": [{"type": "text", "text": "y" * 2005}]},
        {"role": "toolResult", "content": []},
    ]
    text = serialize_conversation(messages)
    assert text == (
        "[User]: fix it\n\n[Assistant thinking]: t1\nt2\n\n[Assistant]: on it\n\n"
        '[Assistant tool calls]: read(path="a.ts"); bash(command="ls -la", opts={"x":[1,"é"]})\n\n'
        "[Tool result]: " + "y" * 2000 + "\n\n[... 5 more characters truncated]"
    )


def test_file_operations_accumulate_and_format():
    ops = FileOps(file_tools())
    ops.add_message({"role": "assistant", "content": [
        {"type": "toolCall", "name": "read", "arguments": {"path": "b.ts"}},
        {"type": "toolCall", "name": "read", "arguments": {"path": "a.ts"}},
        {"type": "toolCall", "name": "edit", "arguments": {"path": "a.ts"}},
        {"type": "toolCall", "name": "write", "arguments": {"path": "Z.md"}},
        {"type": "toolCall", "name": "bash", "arguments": {"path": "ignored"}},
        {"type": "toolCall", "name": "read", "arguments": {"file": "ignored"}}]})
    ops.add_details({"readFiles": ["c.ts"], "modifiedFiles": ["d.ts"]})
    read, modified = ops.lists()
    assert read == ["b.ts", "c.ts"]
    assert modified == ["Z.md", "a.ts", "d.ts"]  # JavaScript code-unit order: uppercase first
    assert format_file_operations(read, modified) == (
        "\n\n<read-files>\nb.ts\nc.ts\n</read-files>\n\n<modified-files>\nZ.md\na.ts\nd.ts\n</modified-files>"
    )
    assert format_file_operations([], []) == ""


def test_entry_role_helpers():
    entry = Entry({"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}}, 2)
    assert entry.role == "user" and entry.message == {"role": "user"}
    assert Entry({"type": "label", "id": "b"}, 3).role is None


def test_last_model_is_path_model_applied_along_the_path():
    """`last_model` scans from the end; it must give what `path_model` gives applied from the root."""
    import itertools

    from batchcompact.core.context import last_model, path_model

    kinds = [
        {"type": "model_change", "provider": "p1", "modelId": "m1"},
        {"type": "message", "message": {"role": "assistant", "provider": "p2", "model": "m2"}},
        {"type": "message", "message": {"role": "user", "content": "hi"}},
        {"type": "message", "message": "not an object"},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        {"type": "compaction", "summary": "s", "firstKeptEntryId": "x"},
    ]
    for combo in itertools.product(range(len(kinds)), repeat=3):
        path = [Entry({**kinds[k], "id": f"e{i}"}, i + 1) for i, k in enumerate(combo)]
        model = None
        for entry in path:
            model = path_model(entry, model)
        assert last_model(path) == model, combo


def test_file_tags_are_bounded_to_their_share_and_read_back_without_the_count_line():
    """#55: the tags take at most their share of the summary budget, the modified files first, the rest
    counted on a last "… and N more files" line, which is never read back as a path (formats without a
    field of their own keep the lists in the tags)."""
    from batchcompact.core.fileops import details_from_summary
    from batchcompact.core.filetags import file_tags

    read = [f"/home/user/project/src/module_{n}/reader.py" for n in range(60)]
    modified = [f"/home/user/project/src/module_{n}/writer.py" for n in range(30)]
    unbounded = file_tags(read, modified, "/home/user/project")
    assert file_tags(read, modified, "/home/user/project", max_tokens=10_000) == unbounded
    tags = file_tags(read, modified, "/home/user/project", max_tokens=200)
    assert len(tags) <= 200 * 4
    assert "src/: module_0/writer.py, module_1/writer.py" in tags and "/home/user" not in tags
    assert "more files\n</read-files>" in tags
    details = details_from_summary("## Goal\nx" + tags, "/home/user/project")
    assert details["modifiedFiles"] == modified[: len(details["modifiedFiles"])]
    assert all(not p.startswith("…") for p in details["readFiles"] + details["modifiedFiles"])
