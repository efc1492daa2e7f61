// Writes a branched Pi session with the SDK's own SessionManager and prints, as JSON, what Pi
// itself says the active path is (getBranch / buildContextEntries), for the conformance suite
// to compare with sessiondex's lineage.
// Usage: node pi_branch.mjs <pi package folder> <cwd> <session folder>
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, cwd, sessionDir] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

const usage = {
  input: 10, output: 5, cacheRead: 0, cacheWrite: 0, reasoning: 0, totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
let clock = Date.parse("2026-11-30T10:00:00Z");
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: clock++ });
const assistant = (text) => ({
  role: "assistant", content: [{ type: "text", text }], api: "openai-completions",
  provider: "fake", model: "fake-1", usage, stopReason: "stop", timestamp: clock++,
});

const sm = SessionManager.create(cwd, sessionDir);
const root = sm.appendMessage(user("Root prompt PROMPTROOTQ7"));
const rootAnswer = sm.appendMessage(assistant("Root answer FINALROOTQ7"));
sm.appendMessage(user("Abandoned prompt PROMPTABANDONEDQ7"));
sm.appendMessage(assistant("Abandoned answer FINALABANDONEDQ7"));
sm.branch(rootAnswer);
const active = sm.appendMessage(user("Active prompt PROMPTACTIVEQ7"));
sm.appendContextEdit(root, null); // the root prompt leaves the model's context, not the history
sm.appendMessage(assistant("Active answer FINALACTIVEQ7"));
sm.appendContextEdit(active, { content: "A shorter prompt REPLACEMENTQ7" }); // in context only
sm.appendUsage("turn", "fake", "fake-1", usage); // token accounting, no conversation

const ids = (entries) => entries.map((e) => ({ id: e.id, type: e.type, role: e.message?.role }));
process.stdout.write(JSON.stringify({
  file: sm.getSessionFile(),
  leaf: sm.getLeafId(),
  branch: ids(sm.getBranch()),
  context: ids(sm.buildContextEntries()),
  all: ids(sm.getEntries()),
}));
