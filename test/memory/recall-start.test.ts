// Where a recall starts (issue 31, item 4): filler words neither search nor rank, the record comes before passages
// holding as many of the query's words, and without a query (or with filler only) the configured goal, else the latest
// checkpoint's objective, else the newest of the record answers; on a real workspace.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { contentStems, stem, withoutFiller } from "../../src/memory/query-words.js";
import { type RecallItem, recall, recentRecord, recordFirst, startingQuery } from "../../src/memory/recall.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";

const root = mkdtempSync(join(tmpdir(), "cairn-recall-start-"));
let count = 0;
const fresh = () =>
  openWorkspace(join(root, `w${count++}`), { logger: createLogger("workspace", () => {}), chunkInBackground: false });
const opened: Workspace[] = [];
afterAll(async () => {
  for (const ws of opened) await ws.close();
  rmSync(root, { recursive: true, force: true });
});
async function workspace(): Promise<Workspace> {
  const ws = await fresh();
  opened.push(ws);
  return ws;
}

describe("query words", () => {
  it("drops filler, keeps the rest as spelled (an identifier stays exact)", () => {
    expect(withoutFiller("continue the Granite Mug work")).toBe("Granite Mug");
    expect(withoutFiller("let's pick up where we left off")).toBe("");
    expect(withoutFiller("continue the IDBCursor.continue() example")).toBe("IDBCursor.continue() example");
    expect(contentStems("Continue the Granite Mugs pricing")).toEqual(["granit", "mug", "pric"]);
  });

  it("folds plural and tense endings alike on both sides, digits untouched", () => {
    for (const [a, b] of [
      ["mugs", "mug"],
      ["pricing", "priced"],
      ["price", "prices"],
      ["shipping", "ship"],
      ["reconciling", "reconcile"],
      ["decided", "decision"],
    ])
      expect(stem(a as string), `${a} ~ ${b}`).toBe(stem(b as string));
    expect(stem("q2")).toBe("q2");
    expect(stem("glasses")).toBe(stem("glass"));
  });
});

describe("recordFirst", () => {
  const passage: RecallItem = {
    type: "passage",
    artifact_id: "ws_doc",
    name: "docs/mugs",
    version: 1,
    start: 0,
    end: 10,
    text: "Granite mug care, and how mugs are priced",
  };
  const decision: RecallItem = {
    type: "observation",
    id: 1,
    kind: "remember",
    at: "",
    label: "Decision: the Granite Mug sells at 18 EUR",
    detail: { note: "decision" },
  };
  it("puts the record ahead of a passage holding as many of the query's words, whatever the fused order", () => {
    expect(recordFirst([passage, decision], contentStems("continue the Granite Mug work"))).toEqual([
      decision,
      passage,
    ]);
  });

  it("lets a passage holding more of the query's words come first", () => {
    expect(recordFirst([decision, passage], contentStems("granite mug care"))).toEqual([passage, decision]);
  });
});

describe("startingQuery and recentRecord", () => {
  let ws: Workspace;
  beforeAll(async () => {
    ws = await workspace();
  });

  it("answers the newest of the record when there is nothing to rank by", async () => {
    expect(await startingQuery(ws, undefined, undefined)).toEqual({ query: undefined, from: "recent" });
    await ws.memory.record("s1", [{ kind: "write", label: "save notes/a v1", detail: {} }]);
    await ws.memory.remember("s1", { kind: "remember", label: "Decision: weekly buckets", detail: {}, event_id: "e1" });
    const sources = { workspace: ws, store: ws.memory, passageBytes: 40_000 };
    const answer = await recentRecord(sources);
    expect(answer.query).toBe("");
    // Remembered before captured, whatever came last.
    expect(answer.items.map((i) => (i.type === "observation" ? i.label : i.type))).toEqual([
      "Decision: weekly buckets",
      "save notes/a v1",
    ]);
  });

  it("takes the query when it holds a content word, else the goal, else the latest checkpoint's objective", async () => {
    await ws.save({ name: "work/old", checkpoint: { objective: "count the churn by week" } });
    await ws.save({ name: "work/new", checkpoint: { objective: "compare the Porto stock counts" } });
    expect(await startingQuery(ws, "the Granite Mug", "a goal")).toEqual({ query: "the Granite Mug", from: "query" });
    expect(await startingQuery(ws, "continue where we left off", "ship the mugs")).toEqual({
      query: "ship the mugs",
      from: "goal",
    });
    expect(await startingQuery(ws, "continue", undefined)).toEqual({
      query: "compare the Porto stock counts",
      from: "checkpoint",
    });
    const sources = { workspace: ws, store: ws.memory, passageBytes: 40_000 };
    const first = (await recall(sources, "compare the Porto stock counts")).items[0];
    expect(first).toMatchObject({ type: "checkpoint", name: "work/new", objective: "compare the Porto stock counts" });
  });

  it("recalls a checkpoint once, as the checkpoint, not also as the passage of its JSON", async () => {
    const sources = { workspace: ws, store: ws.memory, passageBytes: 40_000 };
    const items = (await recall(sources, "churn by week")).items;
    expect(items.filter((i) => i.type !== "observation" && i.name === "work/old")).toEqual([
      expect.objectContaining({ type: "checkpoint" }),
    ]);
  });
});
