"""The agents' code: one folder per agent (`adapters/<name>/`) with its reader, writer, trigger, settings and usage
reader, above every library layer but the CLI.

What an agent is (its name, places, line rules and the lazy `"batchcompact.adapters.<name>.<module>:<attr>"`
references to this code) is declared in the registry, `batchcompact/agents/<name>/`, at the bottom; nothing
below the CLI imports a module here: the registry loads each part on first use (docs/architecture.md)."""
