// The lineage and checkpoints pages of the built `cairn ui` over real HTTP, on workspaces seeded through the
// Workspace API: the bounds (a chain longer than the upstream depth says what it left out; a name with more current
// dependents than the graph draws pages on), the overview's two paged lists, the checkpoints' pins that moved, the
// empty states, and the refusals (an unknown name, a cursor the view did not give).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LINEAGE_LIMITS } from "../../src/ui/graph-lineage.js";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { type RawReply, type RunningView, rawRequest, startView } from "../helpers/ui-server.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-lineage-"));
const WS = join(dir, "ws");
const EMPTY = join(dir, "empty");
/** Links in the chain chain/0 <- chain/1 <- … <- chain/N: past the upstream depth bound by two. */
const CHAIN = LINEAGE_LIMITS.upstreamDepth + 2;
/** Current versions made from base/data: past the downstream bound by five. */
const FAN = LINEAGE_LIMITS.downstreamVersions + 5;
const CHECKPOINTS = 21;
const views: RunningView[] = [];
let full: RunningView;
let empty: RunningView;

beforeAll(async () => {
  const workspace = await openWorkspace(WS, { chunkInBackground: false });
  try {
    await workspace.save({ name: "chain/0", content: "start\n" });
    for (let i = 1; i <= CHAIN; i++) {
      await workspace.save({ name: `chain/${i}`, content: `step ${i}\n`, dependencies: [`chain/${i - 1}`] });
    }
    await workspace.save({ name: "base/data", content: "a,b\n1,2\n", media_type: "text/csv" });
    for (let i = 0; i < FAN; i++) {
      await workspace.save({
        name: `fan/f${String(i).padStart(2, "0")}`,
        content: `f${i}\n`,
        dependencies: ["base/data"],
      });
    }
    // A new base: all FAN dependents are stale, and the chain is not.
    await workspace.save({ name: "base/data", content: "a,b\n1,3\n", media_type: "text/csv", expected_version: 1 });
    for (let i = 0; i < CHECKPOINTS; i++) {
      await workspace.save({
        name: `handoff/h${String(i).padStart(2, "0")}`,
        checkpoint: {
          objective: `objective ${i}`,
          verified: i === CHECKPOINTS - 1 ? "the <chain> holds" : undefined,
          next_step: `step ${i + 1}`,
        },
        dependencies: i === CHECKPOINTS - 1 ? ["chain/0", "fan/f00"] : [],
      });
    }
    // The newest checkpoint pins chain/0 v1; a new chain/0 moves it (and makes the whole chain stale).
    await workspace.save({ name: "chain/0", content: "start again\n", expected_version: 1 });
  } finally {
    await workspace.close();
  }
  await (await openWorkspace(EMPTY, { chunkInBackground: false })).close();
  full = await startView(WS, ["ui", "--port", "0"]);
  empty = await startView(EMPTY, ["ui", "--port", "0"]);
  views.push(full, empty);
}, 120_000);

afterAll(async () => {
  await Promise.all(views.map((v) => v.stop()));
  rmSync(dir, { recursive: true, force: true });
});

function get(v: RunningView, path: string): Promise<RawReply> {
  const token = new URL(v.signInUrl as string).searchParams.get("token") as string;
  return rawRequest(v.port, "GET", path, { Host: `127.0.0.1:${v.port}`, Authorization: `Bearer ${token}` });
}

/** The page's text without tags, whitespace collapsed. */
function text(body: string): string {
  return body
    .replace(/<title>[^<]*<\/title>/g, " ")
    .replace(/<[^>]+>/g, " ")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/\s+/g, " ");
}

/** The hrefs of a page, decoded from the markup. */
function hrefs(body: string): string[] {
  return [...body.matchAll(/href="([^"]*)"/g)].map((m) => (m[1] as string).replace(/&amp;/g, "&"));
}

/** The rows of the table with `className`, each cell's text. */
function rows(body: string, className: string): string[][] {
  const table = new RegExp(`<table class="${className}">([\\s\\S]*?)</table>`).exec(body)?.[1] ?? "";
  const tbody = /<tbody>([\s\S]*)<\/tbody>/.exec(table)?.[1] ?? "";
  return [...tbody.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...(row[1] as string).matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => text(c[1] as string).trim()),
  );
}

describe("lineage of one version", () => {
  it("draws a chain longer than the depth bound to the bound and says how many versions it left out", async () => {
    const page = await get(full, `/lineage/chain/${CHAIN}`);
    expect(page.status).toBe(200);
    const nodes = rows(page.body, "lineage-nodes");
    const drawn = nodes.map((r) => r[0]);
    // The version, then one per level up to the bound; chain/0 and chain/1 lie beyond it.
    expect(drawn).toEqual(Array.from({ length: LINEAGE_LIMITS.upstreamDepth + 1 }, (_, i) => `chain/${CHAIN - i} v1`));
    expect(text(page.body)).toContain(
      `1 more version it was made from is not drawn: the graph walks ${LINEAGE_LIMITS.upstreamDepth} levels upstream, and what lies further was not read.`,
    );
    expect(nodes[1]).toEqual([
      `chain/${CHAIN - 1} v1`,
      "note",
      "stale",
      "it was made from this",
      `lineage of chain/${CHAIN - 1} v1`,
    ]);
    expect(nodes.at(-1)?.[3]).toBe(`made from this, ${LINEAGE_LIMITS.upstreamDepth} levels up`);
    // Every box in the SVG is a link with an accessible name; the figure's caption names the graph.
    const boxes = [...page.body.matchAll(/<a href="([^"]+)" class="node[^"]*">\s*<title>([^<]+)<\/title>/g)];
    expect(boxes.map((b) => b[1])).toEqual(nodes.map((r) => `/artifact/${r[0]?.replace(" v1", "")}`));
    expect(page.body).toMatch(
      /<svg class="lineage-graph(?: wide)?"[^>]*role="group" aria-labelledby="lineage-caption"/,
    );
    expect(page.body).toContain(`<figcaption id="lineage-caption"><strong>Lineage graph of chain/${CHAIN} v1</strong>`);
  });

  it("shows the stale path of a chain whose first input moved, and the input's current version", async () => {
    const page = await get(full, "/lineage/chain/2");
    const nodes = Object.fromEntries(rows(page.body, "lineage-nodes").map((r) => [r[0], r.slice(1, 4)]));
    expect(nodes).toEqual({
      "chain/2 v1": ["note", "stale", "this version"],
      "chain/1 v1": ["note", "stale", "it was made from this"],
      "chain/0 v1": ["note", "not current — now v2", "made from this, 2 levels up"],
      "chain/3 v1": ["note", "stale", "made from it"],
      "chain/4 v1": ["note", "stale", "made from it, 2 levels down"],
      "chain/5 v1": ["note", "stale", "made from it, 3 levels down"],
      "chain/6 v1": ["note", "stale", "made from it, 4 levels down"],
      "chain/0 v2": ["note", "current", "the current version of a name that moved on"],
    });
    expect(rows(page.body, "lineage-edges")).toContainEqual([
      "chain/1 v1",
      "was made from",
      "chain/0 v1",
      "stale input no longer current",
    ]);
    expect(rows(page.body, "lineage-edges")).toContainEqual([
      "chain/2 v1",
      "was made from",
      "chain/1 v1",
      "stale input it is stale itself",
    ]);
    expect(rows(page.body, "lineage-edges")).toContainEqual(["chain/0 v1", "moved to", "chain/0 v2", "no"]);
    expect(text(page.body)).toContain("Some current versions made from the drawn ones are not drawn");
    // The graph marks the stale edges in words and by class (dashed in the stylesheet), not by colour alone.
    expect(page.body).toMatch(
      /<g class="edge made-from stale"><title>chain\/1 v1 was made from chain\/0 v1 \(stale input: no longer current\)<\/title>/,
    );
    expect(page.body).toContain(`class="edge-label">stale input</text>`);
    expect(page.body).toMatch(/<g class="edge moved-to"><title>chain\/0 v1 moved to v2<\/title>/);
    expect(page.body).toContain(`<a href="/artifact/chain/0?v=1" class="node upstream old">`);
  });

  it("pages the current versions made from a name past the downstream bound, counting the older version's", async () => {
    const first = await get(full, "/lineage/base/data");
    const nodes = rows(first.body, "lineage-nodes");
    const fans = nodes.filter((r) => r[0]?.startsWith("fan/"));
    expect(fans).toHaveLength(LINEAGE_LIMITS.downstreamVersions);
    expect(fans.every((r) => r[2] === "stale" && r[3] === "made from it")).toBe(true);
    expect(nodes.find((r) => r[0] === "base/data v1")?.slice(2, 4)).toEqual([
      "not current — now v2",
      "an older version of base/data",
    ]);
    expect(text(first.body)).toContain(
      `More current versions were made from it than the ${LINEAGE_LIMITS.downstreamVersions} drawn: the next page draws the next ones.`,
    );
    const next = hrefs(first.body).find((h) => h.startsWith("/lineage/base/data?after="));
    expect(next).toBeDefined();
    const second = await get(full, next as string);
    expect(second.status).toBe(200);
    const rest = rows(second.body, "lineage-nodes").filter((r) => r[0]?.startsWith("fan/"));
    expect(rest).toHaveLength(FAN - LINEAGE_LIMITS.downstreamVersions);
    expect(new Set([...fans, ...rest].map((r) => r[0])).size).toBe(FAN);
    expect(text(second.body)).toContain("Showing a later page of the versions made from it.");
    expect(hrefs(second.body).some((h) => h.startsWith("/lineage/base/data?after="))).toBe(false);
  });

  it("says a version with nothing pinned and nothing made from it has no lineage yet", async () => {
    const page = await get(full, "/lineage/handoff/h00");
    expect(text(page.body)).toContain("it has no lineage yet");
    expect(rows(page.body, "lineage-nodes")).toHaveLength(1);
  });

  it("answers an unknown name with the 404 page and a cursor it did not give with a 400", async () => {
    expect((await get(full, "/lineage/nothing/here")).status).toBe(404);
    const bad = await get(full, "/lineage/base/data?after=%25%25");
    expect(bad.status).toBe(400);
    expect(text(bad.body)).toContain("is not one this workspace gave");
  });

  it("is linked from the artifact page", async () => {
    const page = await get(full, "/artifact/chain/0?v=1");
    expect(hrefs(page.body)).toContain("/lineage/chain/0?v=1");
  });
});

describe("lineage overview", () => {
  it("lists stale current versions with their reasons, a page at a time, and pages the most depended-on names", async () => {
    const first = await get(full, "/lineage");
    expect(first.status).toBe(200);
    expect(first.body).toContain(`<a href="/lineage" aria-current="page">Lineage</a>`);
    const stale = rows(first.body, "stale-versions");
    expect(stale).toHaveLength(25);
    // Newest first: the checkpoint pinning chain/0 v1 and fan/f00 (stale through base/data v1), then the chain.
    expect(stale[0]?.[0]).toBe(`handoff/h${CHECKPOINTS - 1} v1 stale`);
    expect(stale[0]?.[3]).toBe("made from base/data v1 (through an input) — now v2, chain/0 v1 — now v2");
    expect(stale[1]?.[3]).toBe("made from base/data v1 — now v2");
    const next = hrefs(first.body).find((h) => h.startsWith("/lineage?stale="));
    const second = await get(full, next as string);
    const more = rows(second.body, "stale-versions");
    // The chain's CHAIN links, the FAN dependents and the checkpoint pinning chain/0 v1.
    expect(stale.length + more.length).toBe(CHAIN + FAN + 1);
    expect(more.find((r) => r[0] === `chain/${CHAIN} v1 stale`)?.[3]).toBe(
      "made from chain/0 v1 (through an input) — now v2",
    );
    expect(more.find((r) => r[0] === "chain/1 v1 stale")?.[3]).toBe("made from chain/0 v1 — now v2");
    const depended = rows(first.body, "depended");
    expect(depended[0]).toEqual(["base/data", "v2", String(FAN), "lineage of base/data"]);
    expect(text(first.body)).toContain(`Names that current versions were made from, most first (of ${CHAIN + 2})`);
    expect(depended).toHaveLength(CHAIN + 2);
  });
});

describe("checkpoints", () => {
  it("lists checkpoints newest first with their fields and pins, saying which pinned version moved", async () => {
    const page = await get(full, "/checkpoints");
    expect(page.status).toBe(200);
    const body = text(page.body);
    expect(body).toContain(`${CHECKPOINTS} checkpoints, newest first.`);
    const headings = [...page.body.matchAll(/<h2 id="cp-[^"]+"><a href="([^"]+)">/g)].map((m) => m[1]);
    expect(headings).toHaveLength(20);
    expect(headings[0]).toBe(`/artifact/handoff/h${CHECKPOINTS - 1}`);
    expect(body).toContain(
      `Objective objective ${CHECKPOINTS - 1} Verified the <chain> holds Next step step ${CHECKPOINTS}`,
    );
    expect(body).toContain("Pins 2 versions, 1 moved since");
    expect(body).toContain("chain/0 v1 note — moved its name is now at v2");
    expect(body).toContain("fan/f00 v1 note — still current, but stale");
    expect(body).toContain("Verified not given");
    expect(hrefs(page.body)).toContain("/artifact/chain/0?v=1");
    const older = hrefs(page.body).find((h) => h.startsWith("/checkpoints?cursor="));
    const rest = await get(full, older as string);
    expect([...rest.body.matchAll(/<h2 id="cp-/g)]).toHaveLength(1);
    expect(text(rest.body)).toContain("Continued: newest first.");
  });
});

describe("an empty workspace", () => {
  it("says what makes lineage and how an agent makes a checkpoint", async () => {
    const lineage = text((await get(empty, "/lineage")).body);
    expect(lineage).toContain("there is no lineage to show");
    expect(lineage).toContain("a query saved with save_as");
    const checkpoints = text((await get(empty, "/checkpoints")).body);
    expect(checkpoints).toContain("No checkpoint is saved in this workspace yet.");
    expect(checkpoints).toContain("the next session calls resume and reads those exact versions");
  });
});

describe("Workspace.dependents", () => {
  it("takes version ids only and a limit from 1 to 100, and names what it refuses", async () => {
    const workspace = await openWorkspace(WS, { chunkInBackground: false });
    try {
      await expect(workspace.dependents(["chain/0"])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining('not "chain/0": look the name up first'),
      });
      const [chain0] = await workspace.versions("chain/0", { limit: 1, before: 2 }).then((p) => p.versions);
      await expect(workspace.dependents([chain0?.artifact_id as string], { limit: 0 })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      const made = await workspace.dependents([chain0?.artifact_id as string], { limit: 5 });
      expect(made.versions.map((r) => [r.name, r.current])).toEqual([
        [`handoff/h${CHECKPOINTS - 1}`, true],
        ["chain/1", true],
      ]);
    } finally {
      await workspace.close();
    }
  });
});
