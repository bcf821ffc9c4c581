"""The agents' code: one folder per agent (`adapters/<name>/`) with its reader, writer, trigger, settings and usage
reader, standing on the floor `adapters/common/` (usage rows, line and store helpers, verify, the SQLite session
store), which names no agent.

What an agent is (its name, places, line rules and the lazy `"batchcompact.adapters.<name>.<module>:<attr>"`
references to this code) is declared in the registry, `batchcompact/agents/<name>/`, at the bottom. An adapter
imports only the floor, `core/`, the registry, `formats/` and a few base modules; outside this folder only the
floor is imported, and the registry loads each agent's part on first use (docs/architecture.md)."""
