// search narrowed by the chunk index (decision 0320) finds exactly what a full scan finds: every page sequence of a
// family of queries (prefixes, punctuation, non-ASCII words, case, words only in versions not yet indexed, a version
// indexed half way, a word cut across chunks inside a long line, replaced and deleted versions) equals a naive scan
// of the current texts, on each catalog engine; and the versions it passes over are indeed not read.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/log.js";
import { createFsBlobStore } from "../../../src/workspace/blobs/fs-blob-store.js";
import type { Catalog } from "../../../src/workspace/catalog/catalog.js";
import { createPgCatalog } from "../../../src/workspace/catalog/pg-catalog.js";
import { createSqliteCatalog } from "../../../src/workspace/catalog/sqlite-catalog.js";
import { ChunkIndexer } from "../../../src/workspace/retrieval/context-index.js";
import { type SearchResult, search } from "../../../src/workspace/retrieval/search.js";
import { Workspace } from "../../../src/workspace/workspace.js";
import { freshPostgresUrl } from "../../helpers/backends.js";
import { expectedSnippet, int, naiveMatches, pick, random } from "./oracle.js";

const root = mkdtempSync(join(tmpdir(), "cairn-narrow-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const quiet = createLogger("workspace", () => {});
let n = 0;

const ENGINES: [string, () => Promise<Catalog>][] = [
  ["sqlite", () => createSqliteCatalog(join(root, `c${n++}.db`))],
  ["postgres", () => createPgCatalog(freshPostgresUrl())],
];

const WORDS = [
  "alpha",
  "beta",
  "gamma",
  "delta",
  "Alphabet",
  "betamax",
  "école",
  "naïve",
  "Straße",
  "日本語",
  "x",
  "y2",
];
const SEPARATORS = [" ", " ", " ", ", ", ". ", "\n", "\n\n", "(", ")", "-", "_", "/", "\t", " — "];

/** Text of about `bytes` bytes: words and separators, lines short enough that chunks end at line ends. */
function prose(rand: () => number, bytes: number): string {
  const pieces: string[] = [];
  for (let size = 0; size < bytes; ) {
    const piece = pick(rand, WORDS) + pick(rand, SEPARATORS);
    pieces.push(piece);
    size += Buffer.byteLength(piece);
  }
  return pieces.join("");
}

/** One line of 3,000 bytes: the chunker cuts it near 2,048 bytes, inside the word "gammadelta" that spans the cut. */
function longLine(): string {
  const head = "q".repeat(2040);
  return `${head} gammadelta beta ${"z".repeat(3000 - head.length - 17)}\n`;
}

const QUERIES = [
  "alpha",
  "alpha beta",
  " beta ",
  "pha bet",
  "beta.",
  "(x",
  "x)",
  "BETA gamma",
  "école",
  " naïve",
  "Straße ",
  "日本語 x",
  "alpha\nbeta",
  "zulu",
  "zulu yankee",
  " yankee",
  " gammadelta ",
  "q gammadelta beta",
  "old words only",
  " betamax",
  "delta, beta",
  " delta, beta",
  "x alpha beta gamma ",
  " y2 (x",
  "école alpha beta",
];

interface Doc {
  name: string;
  text: string;
}

/** Every hit of `text` over the current docs in name order, as a full scan gives them. */
function expectedHits(docs: ReadonlyMap<string, string>, text: string, context: number) {
  const names = [...docs.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return names.flatMap((name) => {
    const body = docs.get(name) as string;
    return naiveMatches(body, text).map((m) => {
      const snippet = expectedSnippet(body, m, context);
      return { name, start: m.start, end: m.end, snippet: snippet.snippet };
    });
  });
}

async function allHits(ws: Workspace, text: string, limit: number, context: number) {
  const pages: SearchResult[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await search(ws, { text, limit, context_bytes: context, ...(cursor === undefined ? {} : { cursor }) });
    pages.push(page);
    if (page.cursor === null) break;
    cursor = page.cursor;
  }
  return {
    hits: pages.flatMap((p) => p.hits.map((h) => ({ name: h.name, start: h.start, end: h.end, snippet: h.snippet }))),
    scanned: pages.reduce((sum, p) => sum + p.scanned_bytes, 0),
  };
}

for (const [engine, openCatalog] of ENGINES) {
  describe(`search narrowed by the chunk index (${engine})`, () => {
    it("finds what a full scan finds for every query of the family, passing over versions that lack a word", async () => {
      const rand = random(320);
      const catalog = await openCatalog();
      const blobs = await createFsBlobStore(join(root, `b${n++}`));
      const ws = new Workspace(catalog, blobs, { logger: quiet, chunkInBackground: false });
      const indexer = new ChunkIndexer(catalog, blobs, { background: false, log: quiet });
      try {
        const current = new Map<string, string>();
        const save = async (doc: Doc, expected?: number) => {
          await ws.save({ name: doc.name, content: doc.text, expected_version: expected });
          current.set(doc.name, doc.text);
        };
        // Indexed: prose of several chunks, a long line cut inside a word, versions later replaced or deleted.
        for (let i = 0; i < 12; i++) await save({ name: `a/doc-${i}`, text: prose(rand, int(rand, 40, 3000)) });
        await save({ name: "a/long", text: longLine() + prose(rand, 500) });
        await save({ name: "a/rare", text: `${prose(rand, 300)} kilowatt, ${prose(rand, 300)}` });
        await save({ name: "a/replaced", text: "old words only, then alpha beta" });
        await save({ name: "a/deleted", text: "old words only, and zulu yankee" });
        await indexer.index(Number.MAX_SAFE_INTEGER);
        await save({ name: "a/replaced", text: "new words: gamma delta, beta." }, 1);
        await ws.delete({ ref: "a/deleted", expected_version: 1 });
        current.delete("a/deleted");
        // Indexed half way (the step stops inside it), and not indexed at all.
        const filler = `${"q".repeat(79)}\n`.repeat(500);
        await save({ name: "b/half", text: `${filler}${prose(rand, 300)}\nzulu yankee, alpha beta\n` });
        await indexer.index(16 * 1024);
        for (let i = 0; i < 4; i++) {
          await save({
            name: `c/new-${i}`,
            text: `${prose(rand, int(rand, 20, 800))} zulu yankee ${pick(rand, WORDS)}`,
          });
        }
        const states = await catalog.chunkBacklog({ limit: 100 });
        expect(states.map((s) => s.name)).toContain("b/half");
        expect(states.find((s) => s.name === "b/half")?.indexed_bytes).toBeGreaterThan(0);

        for (const text of QUERIES) {
          const limit = int(rand, 1, 20);
          const context = pick(rand, [0, 7, 64]);
          const found = await allHits(ws, text, limit, context);
          expect(found.hits, `${JSON.stringify(text)}, limit ${limit}, context ${context}`).toEqual(
            expectedHits(current, text, context),
          );
        }

        // " kilowatt": a word of one indexed version: every other indexed one is passed over unread, except a/long,
        // whose line was cut inside a word; versions not indexed to their end are read.
        const total = [...current.values()].reduce((sum, t) => sum + Buffer.byteLength(t), 0);
        const read = [...current.entries()]
          .filter(([name]) => !name.startsWith("a/") || name === "a/long" || name === "a/rare")
          .reduce((sum, [, t]) => sum + Buffer.byteLength(t), 0);
        const rare = await allHits(ws, " kilowatt", 20, 0);
        expect(rare.hits.map((h) => h.name)).toEqual(["a/rare"]);
        expect(rare.scanned).toBe(read);
        expect(read).toBeLessThan(total);
        // Without a word between separators, or with one that is only a word's end, everything is read.
        expect((await allHits(ws, "kilowatt", 20, 0)).scanned).toBe(total);
        expect((await allHits(ws, "kilowatt ", 20, 0)).scanned).toBe(total);
      } finally {
        await indexer.stop();
        await ws.close();
      }
    });
  });
}
