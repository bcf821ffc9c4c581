// pi's own session code (the installed npm package's dist, run by node) on session files: what pi
// opens, which leaf and path it takes, the context it rebuilds, and where its prepareCompaction cuts.
//
// usage: node pi_modules.mjs PACKAGE_DIR < request.json > answer.json
// request: {"open": [file, ...], "prepare": [{"file": f, "keep": [tokens, ...]}, ...]}
// Every file is opened with pi's SessionManager.open, which rewrites a v1/v2 file after migrating it
// and resets one without a valid header: callers pass copies.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
const load = (relative) => import(pathToFileURL(join(root, "dist", "core", relative)).href);
const { SessionManager, getLatestCompactionEntry } = await load("session-manager.js");
const { convertToLlm } = await load("messages.js");
const { prepareCompaction, DEFAULT_COMPACTION_SETTINGS } = await load("compaction/compaction.js");
const { computeFileLists } = await load("compaction/utils.js");

const request = JSON.parse(readFileSync(0, "utf8"));

function nonEmptyLines(text) {
	return text.split("\n").filter((line) => line.trim()).length;
}

function open(file) {
	const before = readFileSync(file, "utf8");
	const manager = SessionManager.open(file);
	const after = readFileSync(file, "utf8");
	const entries = manager.getEntries();
	const ids = new Set(entries.map((entry) => entry.id));
	return { manager, entries, before, after, ids };
}

// The file line (1-based, header on line 1) of each entry pi holds.
function lineOf(entries, entry) {
	const index = entries.indexOf(entry);
	return index < 0 ? null : index + 2;
}

function describe(file) {
	const { manager, entries, before, after, ids } = open(file);
	const header = manager.getHeader();
	const branch = manager.getBranch();
	const context = manager.buildSessionContext();
	return {
		file,
		header: header ? { id: header.id, version: header.version ?? null } : null,
		lines: nonEmptyLines(before),
		entries: entries.length,
		rewritten: before !== after,
		leafId: manager.getLeafId(),
		lastLineId: entries.length ? entries[entries.length - 1].id : null,
		orphans: entries.filter((entry) => entry.parentId && !ids.has(entry.parentId)).map((entry) => entry.id),
		branch: branch.map((entry) => entry.id),
		compactionInForce: getLatestCompactionEntry(branch)?.id ?? null,
		roles: context.messages.map((message) => message.role),
		thinkingLevel: context.thinkingLevel,
		model: context.model,
		llm: convertToLlm(context.messages),
	};
}

function prepare({ file, keep }) {
	const { manager, entries } = open(file);
	const branch = manager.getBranch();
	const byMessage = new Map(entries.filter((entry) => entry.message).map((entry) => [entry.message, entry]));
	return keep.map((keepRecentTokens) => {
		const prep = prepareCompaction(branch, { ...DEFAULT_COMPACTION_SETTINGS, keepRecentTokens });
		if (!prep) return { keep: keepRecentTokens, plan: null };
		const firstKept = entries.find((entry) => entry.id === prep.firstKeptEntryId);
		const turnStart = prep.isSplitTurn ? byMessage.get(prep.turnPrefixMessages[0]) : undefined;
		const { readFiles, modifiedFiles } = computeFileLists(prep.fileOps);
		return {
			keep: keepRecentTokens,
			plan: {
				firstKeptLine: lineOf(entries, firstKept),
				turnStartLine: turnStart ? lineOf(entries, turnStart) : null,
				isSplitTurn: prep.isSplitTurn,
				messagesToSummarize: prep.messagesToSummarize.length,
				turnPrefixMessages: prep.turnPrefixMessages.length,
				tokensBefore: prep.tokensBefore,
				readFiles: readFiles.length,
				modifiedFiles: modifiedFiles.length,
			},
		};
	});
}

const answer = {
	open: (request.open ?? []).map(describe),
	prepare: (request.prepare ?? []).map((item) => ({ file: item.file, results: prepare(item) })),
};
process.stdout.write(JSON.stringify(answer));
