// The web view at scale, shared by its browser test and its benchmark: a workspace of 10,000 artifacts in 120
// namespaces (saved through the Workspace, as an agent would), real data beside them (US airports in two versions, a
// saved query chain made stale, a checkpoint), the pages to time, and each page's load time as the browser measures
// it (the navigation entry: from the request to the load event).
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { openWorkspace } from "../dist/workspace/workspace.js";

const ROOT = resolve(fileURLToPath(import.meta.url), "../..");
const MAIN = join(ROOT, "dist", "main.js");
const AIRPORTS = join(ROOT, "node_modules", "vega-datasets", "data", "airports.csv");

export const SCALE = { artifacts: 10_000, namespaces: 120, parts: 7 };
/** The bound on a page's load time at this scale. */
export const PAGE_LOAD_TARGET_MS = 300;

/** The pages timed, as a person would open them; `follow`: time the page a link of `path` leads to instead. */
export const SCALE_PAGES = [
  { label: "workspace", path: "/" },
  { label: "the list's second page", path: "/", follow: "a[rel=next]" },
  { label: "a namespace", path: "/?ns=team7" },
  { label: "a kind", path: "/?kind=csv" },
  { label: "the namespace index", path: "/namespaces" },
  { label: "find", path: "/?q=airports+flights" },
  { label: "a note", path: "/artifact/team7/part0/note-7" },
  { label: "a table (airports)", path: "/artifact/geo/airports" },
  { label: "a stale query", path: "/artifact/reports/by-state" },
  { label: "a checkpoint", path: "/artifact/handoff/airports" },
  { label: "a diff", path: "/diff/geo/airports?from=1&to=2" },
  { label: "lineage overview", path: "/lineage" },
  { label: "lineage of a stale query", path: "/lineage/reports/by-state" },
  { label: "lineage of the airports", path: "/lineage/geo/airports" },
  { label: "checkpoints", path: "/checkpoints" },
  { label: "tasks", path: "/tasks" },
  { label: "a task", path: "/tasks/airports-by-state" },
  { label: "claims", path: "/claims" },
  { label: "changes", path: "/changes" },
  { label: "changes of one name", path: "/changes?name=geo%2Fairports" },
  { label: "sessions (none under cairn ui)", path: "/sessions" },
];

/**
 * Runs the built CLI on the workspace; its JSON reply.
 * @param {string} dir
 * @param {...string} args
 */
function cairn(dir, ...args) {
  const r = spawnSync(process.execPath, [MAIN, "--workspace", dir, ...args, "--json"], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_LOG: "error" },
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`cairn ${args.join(" ")} failed: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * Fills `dir` (a new workspace) with `SCALE.artifacts` notes named `team<i % 120>/part<i % 7>/note-<i>` (text of one
 * to five lines, a summary each), then the real data: geo/airports (CSV) v1 and v2, reports/by-state computed from v1
 * by a saved query (so stale), a checkpoint pinning both, a task over the airports run once, and a claim.
 * @param {string} dir
 * @param {{ artifacts?: number, scratch: string }} options `scratch`: a directory for the second airports file
 */
export async function populateScaleWorkspace(dir, options) {
  const count = options.artifacts ?? SCALE.artifacts;
  const workspace = await openWorkspace(dir);
  try {
    for (let i = 0; i < count; i++) {
      await workspace.save({
        name: `team${i % SCALE.namespaces}/part${i % SCALE.parts}/note-${i}`,
        content: `note ${i}: ${i % 3 === 0 ? "airports" : "flights"} of batch ${i % 13}\n`.repeat(1 + (i % 5)),
        summary: `note ${i} of team ${i % SCALE.namespaces}`,
      });
    }
  } finally {
    await workspace.close();
  }
  cairn(dir, "import", AIRPORTS, "--name", "geo/airports", "--summary", "US airports with their state");
  cairn(
    dir,
    "query",
    "SELECT state, count(*) AS airports FROM input1 GROUP BY state ORDER BY airports DESC",
    "--input",
    "geo/airports",
    "--save-as",
    "reports/by-state",
  );
  cairn(
    dir,
    "save",
    "handoff/airports",
    "--checkpoint",
    JSON.stringify({
      objective: "Count airports by state",
      verified: "the counts sum to the rows of geo/airports",
      next_step: "refresh reports/by-state after the airports list changes",
    }),
    "--dependencies",
    "reports/by-state",
    "geo/airports",
  );
  const second = join(options.scratch, "airports-v2.csv");
  writeFileSync(second, `${readFileSync(AIRPORTS, "utf8")}XSF,Scale Field,Nowhere,CA,USA,37.5,-122.3\n`);
  cairn(dir, "import", second, "--name", "geo/airports", "--expected-version", "1");
  cairn(
    dir,
    "task_define",
    "airports-by-state",
    "--objective",
    "How many airports does each state have?",
    "--sources",
    JSON.stringify({ airports: "geo/airports" }),
    "--steps",
    JSON.stringify({
      name: "by_state",
      inputs: ["airports"],
      sql: "SELECT state, count(*) AS airports FROM input1 GROUP BY state ORDER BY airports DESC",
    }),
  );
  cairn(dir, "task_run", "airports-by-state");
  cairn(dir, "claim", "geo/airports", "--ttl-s", "3600");
}

/**
 * Loads `url` `loads` times in `page` (a playwright-core Page); each load's navigation duration in ms.
 * @param {import("playwright-core").Page} page
 * @param {string} url
 * @param {number} loads
 */
export async function pageLoadTimes(page, url, loads) {
  const times = [];
  for (let i = 0; i < loads; i++) {
    const response = await page.goto(url, { waitUntil: "load" });
    if (response === null || response.status() !== 200) {
      throw new Error(`${url} answered ${response?.status() ?? "nothing"}`);
    }
    times.push(
      await page.evaluate(() => {
        // In the page: the browser's Performance, whose entry types include "navigation" (Node's do not).
        const [nav] = performance.getEntriesByType(/** @type {any} */ ("navigation"));
        return nav === undefined ? -1 : Math.round(nav.duration * 10) / 10;
      }),
    );
  }
  return times;
}

/**
 * Times every page of SCALE_PAGES, `loads` loads each, in `page` (signed in to the view at `origin`).
 * @param {import("playwright-core").Page} page
 * @param {string} origin
 * @param {number} loads
 */
export async function timeScalePages(page, origin, loads) {
  const timed = [];
  for (const { label, path, follow } of SCALE_PAGES) {
    let target = path;
    if (follow !== undefined) {
      await page.goto(`${origin}${path}`);
      const href = await page.locator(follow).first().getAttribute("href");
      if (href === null) throw new Error(`${path} has no ${follow} link`);
      target = href;
    }
    timed.push({ label, path: target, times: await pageLoadTimes(page, `${origin}${target}`, loads) });
  }
  return timed;
}
