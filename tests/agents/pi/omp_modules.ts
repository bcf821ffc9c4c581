// oh-my-pi's own session code (the installed npm package's src/, run by bun) on session files: what it
// opens, which leaf and path it takes, and the context it rebuilds (SessionManager.open, buildSessionContext).
//
// usage: bun omp_modules.ts PACKAGE_DIR < request.json > answer.json
// request: {"open": [file, ...], "prepare": [{"file": f, "keep": tokens}, ...],
//           "thresholds": [{"cwd": c, "agentDir": d, "tokens": n, "window": w}, ...]}
// thresholds: its settings (config.yml in agentDir, the project's .omp/ under cwd; Settings.loadReadOnly) and
// its trigger (shouldCompact, resolveThresholdTokens) on a context of `tokens` in a window of `window`.
// prepare: its prepareCompaction (pi-agent-core) on the file's branch: the previous summary it carries on
// and the file operations it collects (a previous compaction's details among them).
// SessionManager.open may rewrite a file it migrates and holds a writer lock: callers pass copies.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = process.argv[2];
const load = (relative: string) => import(join(root, "src", "session", relative));
const { SessionManager } = await load("session-manager.ts");
const core = join(root, "..", "pi-agent-core", "src", "compaction");
const { prepareCompaction, DEFAULT_COMPACTION_SETTINGS, shouldCompact, resolveThresholdTokens } = await import(
	join(core, "compaction.ts"),
);
const { Settings } = await import(join(root, "src", "config", "settings.ts"));

const request = JSON.parse(readFileSync(0, "utf8"));

function nonEmptyLines(text: string): number {
	return text.split("\n").filter((line) => line.trim()).length;
}

async function describe(file: string) {
	const before = readFileSync(file, "utf8");
	const manager = await SessionManager.open(file);
	const after = readFileSync(file, "utf8");
	const entries = manager.getEntries();
	const header = manager.getHeader();
	const branch = manager.getBranch();
	const context = manager.buildSessionContext();
	let compaction = null;
	for (const entry of branch) if (entry.type === "compaction") compaction = entry.id;
	return {
		file,
		header: header ? { id: header.id, version: header.version ?? null, parentSession: header.parentSession ?? null } : null,
		lines: nonEmptyLines(before),
		entries: entries.length,
		rewritten: before !== after,
		leafId: manager.getLeafId(),
		lastLineId: entries.length ? entries[entries.length - 1].id : null,
		branch: branch.map((entry: { id: string }) => entry.id),
		compactionInForce: compaction,
		messages: context.messages,
	};
}

async function prepare({ file, keep }: { file: string; keep: number }) {
	const manager = await SessionManager.open(file);
	const prep = prepareCompaction(manager.getBranch(), { ...DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: keep });
	if (!prep) return { file, previousSummary: null, read: [], edited: [] };
	return {
		file,
		previousSummary: prep.previousSummary ?? null,
		firstKeptEntryId: prep.firstKeptEntryId,
		read: [...prep.fileOps.read],
		edited: [...prep.fileOps.edited, ...(prep.fileOps.written ?? [])],
	};
}

async function threshold({ cwd, agentDir, tokens, window }: { cwd: string; agentDir: string; tokens: number; window: number }) {
	const settings = await Settings.loadReadOnly({ cwd, agentDir });
	const group = settings.getGroup("compaction");
	return {
		compact: shouldCompact(tokens, window, group),
		threshold: resolveThresholdTokens(window, group),
		keepRecentTokens: group.keepRecentTokens,
	};
}

const open = [];
for (const file of request.open ?? []) open.push(await describe(file));
const prepared = [];
for (const item of request.prepare ?? []) prepared.push(await prepare(item));
// Bun.write waits until every byte is out; exit then (the manager may hold timers or a lock open).
const thresholds = [];
for (const item of request.thresholds ?? []) thresholds.push(await threshold(item));
await Bun.write(Bun.stdout, JSON.stringify({ open, prepare: prepared, thresholds }));
process.exit(0);
