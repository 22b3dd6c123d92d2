// Recall a new session can start from (issue 31, item 4; decision 0286): the share of the 37 labelled "continue …"
// questions of test/fixtures/recall/continue-set.json whose first recalled item is the labelled one, over the
// fixture's two-session workspace (checkpoints, remembered decisions, captured observations, documents sharing their
// words), through the built recall with no configured goal. Printed against its floor (90%) as a ratio.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../dist/log.js";
import { recall, recentRecord, startingQuery } from "../dist/memory/recall.js";
import { openWorkspace } from "../dist/workspace/workspace.js";
import { buildWorkspace, score } from "../test/fixtures/recall/continue-set.mjs";
import { progress, table } from "./lib.mjs";

/** The share of questions whose first item must be the labelled one (issue 31). */
const FLOOR = 0.9;

export default async function main() {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-continue-"));
  const ws = await openWorkspace(join(dir, "ws"), { logger: createLogger("workspace", () => {}) });
  try {
    progress("recall-continue: building the two-session workspace");
    await buildWorkspace(ws);
    progress("recall-continue: asking the labelled questions");
    const result = await score(ws, { recall, startingQuery, recentRecord });
    const ratio = result.rate / FLOOR;
    console.log(
      table([
        { measure: `right item first, ${result.total} "continue …" questions`, figure: `${result.hits}` },
        { measure: "share right first (floor 90%)", figure: `${(result.rate * 100).toFixed(1)}%` },
        { measure: "measured / floor", figure: ratio.toFixed(3) },
      ]),
    );
    for (const miss of result.misses) console.log(`miss: ${JSON.stringify(miss)}`);
    const verdict = result.rate >= FLOOR ? "PASS" : "MISS";
    return {
      summary: `${result.hits}/${result.total} right first (${(result.rate * 100).toFixed(1)}%), ${ratio.toFixed(3)}x the 90% floor: ${verdict}`,
      ...result,
      floor: FLOOR,
      ratio,
    };
  } finally {
    await ws.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
