"""The entry tree of a session: id index, children, active leaf, paths, branches (reference 1.3, 1.5).

Invariants: `path()` always terminates (parent cycles are cut and reported); the active leaf is the
entry on the last line of the file, as pi's `_buildIndex` sets it, whatever its type.
"""

from __future__ import annotations

from batchcompact.core.entries import ERROR, Entry, Problem

# The key of a root that continues earlier history: the id of the entry that history ended on (None when
# the file lacks it); set on Claude Code's compact boundaries by its reader.
CONTINUES = "logicalParentId"


class SessionTree:
    def __init__(self, entries: list[Entry], path_name: str = "") -> None:
        self.entries = entries
        self.by_id: dict[str, Entry] = {}
        self.children: dict[str | None, list[Entry]] = {}
        self.problems: list[Problem] = []
        self._index(entries, path_name)

    def extended(self, new: list[Entry], path_name: str = "") -> SessionTree:
        """`SessionTree([*self.entries, *new])`, built from this tree: only `new` is indexed (an appended
        file read back). The same index, children, problems and leaf, since this tree's entries index the
        same way whatever follows them; a tree with a forward parent or a problem is built again whole
        (its cycle search covers every entry). This tree is left as it was."""
        entries = [*self.entries, *new]
        if not self._acyclic:
            return SessionTree(entries, path_name)
        tree = SessionTree.__new__(SessionTree)
        tree.entries = entries
        tree.by_id = dict(self.by_id)
        children = tree.children = dict(self.children)
        for entry in new:  # the lists `new` adds to are copied first: this tree's stay as they are
            parent = entry.parent_id if entry.parent_id != entry.id else None
            if parent in children and children[parent] is self.children.get(parent):
                children[parent] = list(children[parent])
        tree.problems = []
        tree._index(new, path_name)
        if tree._acyclic:  # entries appended on the active leaf: the active path is this one's, then theirs
            fresh = {id(entry) for entry in new}
            chain: list[Entry] = []
            node = tree._leaf
            while node is not None and id(node) in fresh:
                chain.append(node)
                node = tree.by_id.get(node.parent_id) if node.parent_id is not None else None
            if node is not None and node is self._leaf:
                tree._active_path = [*self.path(), *reversed(chain)]
        return tree

    def _index(self, entries: list[Entry], path_name: str) -> None:
        """Index `entries`, the last of `self.entries`; then the leaf, the forward parents' problems and
        the cycle search (over all of `self.entries`)."""
        # One pass: `by_id` holds the earlier lines' ids when an entry's parent is looked up, so a parent
        # missing from it is a later line or no line at all; only those are looked up again at the end.
        # Problems come in the order of two passes: duplicate ids, then parents that point to no entry.
        by_id = self.by_id
        children = self.children
        forward: list[Entry] = []  # entries whose parent is not an earlier line
        for entry in entries:
            entry_id = entry.id
            parent = entry.parent_id
            if parent is not None:
                if parent not in by_id:
                    forward.append(entry)
                if parent == entry_id:
                    parent = None
            if parent in children:
                children[parent].append(entry)
            else:
                children[parent] = [entry]
            if entry_id is not None:
                if entry_id in by_id:
                    first = by_id[entry_id]
                    self.problems.append(
                        Problem(path_name, entry.line, ERROR,
                                f"duplicate id {entry_id!r} (first used on line {first.line})")
                    )
                by_id[entry_id] = entry  # later wins, as in pi's index
        for entry in forward:
            if entry.parent_id not in by_id:
                self.problems.append(
                    Problem(path_name, entry.line, ERROR, f"parentId {entry.parent_id!r} points to no entry")
                )
        self._leaf: Entry | None = self.entries[-1] if self.entries else None
        self._active_path: list[Entry] | None = None
        # Without duplicate ids, parents that are all earlier lines form no cycle (each step goes up the
        # file): the search below would find nothing.
        self._acyclic = not (forward or self.problems)
        if not self._acyclic:
            self._find_cycles(path_name)

    def _find_cycles(self, path_name: str) -> None:
        state: dict[str, int] = {}  # 1 = on the current walk, 2 = known to reach a root
        for entry in self.entries:
            if entry.id is None or state.get(entry.id) == 2:
                continue
            walk: list[str] = []
            node: Entry | None = entry
            while node is not None and node.id is not None and state.get(node.id) != 2:
                if state.get(node.id) == 1:
                    self.problems.append(
                        Problem(path_name, node.line, ERROR, f"parent cycle through entry {node.id!r}")
                    )
                    break
                state[node.id] = 1
                walk.append(node.id)
                parent = node.parent_id
                node = self.by_id.get(parent) if parent is not None and parent != node.id else None
            for entry_id in walk:
                state[entry_id] = 2

    @property
    def leaf(self) -> Entry | None:
        return self._leaf

    @leaf.setter
    def leaf(self, entry: Entry | None) -> None:
        """Readers of formats whose leaf is not the last line (Claude) set it; the cached path follows."""
        self._leaf = entry
        self._active_path = None

    def get(self, entry_id: str | None) -> Entry | None:
        return self.by_id.get(entry_id) if entry_id is not None else None

    def path(self, leaf: Entry | str | None = None) -> list[Entry]:
        """Entries from the root to `leaf` (default: the active leaf), root first.

        The active path is computed once and shared: callers must not mutate the returned list.
        """
        if leaf is None:
            if self._active_path is None:
                self._active_path = self._walk(self.leaf)
            return self._active_path
        return self._walk(self.by_id.get(leaf) if isinstance(leaf, str) else leaf)

    def _walk(self, node: Entry | None) -> list[Entry]:
        out: list[Entry] = []
        by_id = self.by_id
        if self._acyclic:  # every parent is an earlier line: the walk ends
            while node is not None:
                out.append(node)
                parent = node.parent_id
                node = by_id.get(parent) if parent is not None else None
            out.reverse()
            return out
        seen: set[int] = set()
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            out.append(node)
            parent = node.parent_id
            node = self.by_id.get(parent) if parent is not None and parent != node.id else None
        out.reverse()
        return out

    def leaves(self) -> list[Entry]:
        """Entries with no children, in file order."""
        return [e for e in self.entries if e.id is not None and not self.children.get(e.id)]

    def history(self, leaf: Entry | str | None = None) -> list[Entry]:
        """`path(leaf)` with the history each of its roots continues put back in front, root first.

        A root that continues earlier history (a Claude Code compact boundary: `parentUuid` null) names
        the entry that history ended on in `logicalParentId`; when the file lacks that entry, the history
        ended on the last message before the root. Without such roots (pi, Codex) this is `path(leaf)`."""
        path = self.path(leaf)
        seen: set[int] = set()
        while path and path[0].data.get(CONTINUES, False) is not False and id(path[0]) not in seen:
            seen.add(id(path[0]))
            ended = self.get(path[0].data.get(CONTINUES)) or self._last_message_before(path[0])
            if ended is None:
                break
            path = [*self.path(ended), *path]
        return path

    def _last_message_before(self, root: Entry) -> Entry | None:
        last = None
        for entry in self.entries:
            if entry is root or (entry.line is not None and root.line is not None and entry.line >= root.line):
                break
            if entry.type == "message":
                last = entry
        return last

    def abandoned_leaves(self) -> list[Entry]:
        """Leaves that are not on the active path nor on the history it continues (`history`): the ends
        of branches the user left behind."""
        on_path = {id(e) for e in self.history()}
        return [e for e in self.leaves() if id(e) not in on_path]

