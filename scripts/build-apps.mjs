// Builds the MCP Apps (decisions 0310-0313): each app's browser code (src/apps/) bundled by esbuild (with uPlot for
// the table, dagre for the lineage), and its styles (views/*-style, as tsc built them, and uPlot's), into one
// self-contained HTML file under dist/apps/ that the server serves as a ui:// resource. Nothing is fetched at run
// time; an app past APP_BYTES fails the build. Also the web view's chart (decision 0316): src/apps/ui-chart.ts with
// uPlot as dist/ui-assets/chart.js and uPlot's stylesheet as chart.css, served by the web view from its own origin.
// Run after tsc (npm run build does): it reads dist/views/.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The budget of one app's HTML (issue 32). */
export const APP_BYTES = 300 * 1024;

/** Rules of the app's own frame: its body, notes, the sort buttons and the pager. */
const APP_CSS = `* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 0.9375rem/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { padding: 0.5rem; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; border-radius: 2px; }
.muted { color: var(--muted); }
.note { margin: 0.25rem 0; color: var(--muted); }
button { font: inherit; color: var(--fg); background: var(--panel); border: 1px solid var(--muted); border-radius: 4px; padding: 0.25rem 0.75rem; cursor: pointer; }
button:disabled { color: var(--muted); border-color: var(--line); cursor: default; }
th button.sort { all: unset; cursor: pointer; display: block; width: 100%; }
th button.sort:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
th.num button.sort { text-align: right; }
.sort-mark { font-size: 0.75rem; padding-left: 0.25rem; }
.pager { display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 0.5rem 0; }
h1 { font-size: 1.125rem; margin: 0.25rem 0; }
.callout { border-left: 4px solid var(--stale-fg); background: var(--stale-bg); color: var(--stale-fg); padding: 0.25rem 0.75rem; margin: 0.5rem 0; }
.callout p, .callout ul { margin: 0.25rem 0; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
tr.stale th, tr.stale td { background: var(--stale-bg); color: var(--stale-fg); }
table.lineage-nodes th, table.lineage-nodes td { overflow-wrap: break-word; min-width: 0; }
table.lineage-nodes button { white-space: nowrap; }
h2 { font-size: 1rem; margin: 0.75rem 0 0.25rem; }
h2:focus { outline: none; }
button.link { all: unset; color: var(--link); text-decoration: underline; text-underline-offset: 0.15em; cursor: pointer; overflow-wrap: anywhere; }
button.link:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.nav { display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 0.25rem 0; }
.nav:empty { display: none; }
.table-wrap + .table-wrap, .table-wrap + p { margin-top: 0.75rem; }
td.pre { white-space: pre-wrap; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.15rem 0.75rem; margin: 0.5rem 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre.args { background: var(--panel); border: 1px solid var(--line); border-radius: 4px; padding: 0.5rem; margin: 0.25rem 0; overflow: auto; max-height: 24rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.actions { display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 0.5rem 0; }
`;

/** Narrow frames: table cells give up some padding (after TABLE_CSS, which sets it). */
const NARROW_CSS = `@media (max-width: 480px) { th, td { padding: 0.3rem 0.35rem; } }
`;

/**
 * The apps: their script, their title, their file under dist/apps/, and the styles beyond the palette and APP_CSS.
 * @type {{ name: string, entry: string, title: string, file: string, css: (views: Record<string, string>, uplot: string) => string }[]}
 */
export const APPS = [
  {
    name: "table",
    entry: "src/apps/table-app.ts",
    title: "Cairn: result table",
    file: "table.html",
    css: (views, uplot) => `${views.TABLE_CSS}${uplot}${views.CHART_CSS}`,
  },
  {
    name: "lineage",
    entry: "src/apps/lineage-app.ts",
    title: "Cairn: lineage",
    file: "lineage.html",
    css: (views) => `${views.TABLE_CSS}${views.LINEAGE_CSS}`,
  },
  {
    name: "brief",
    entry: "src/apps/brief-app.ts",
    title: "Cairn: task brief",
    file: "brief.html",
    css: (views) => `${views.TABLE_CSS}${views.BRIEF_CSS}${NARROW_CSS}`,
  },
  {
    name: "diff",
    entry: "src/apps/diff-app.ts",
    title: "Cairn: diff",
    file: "diff.html",
    css: (views) => `${views.TABLE_CSS}${NARROW_CSS}`,
  },
  {
    name: "approval",
    entry: "src/apps/approval-app.ts",
    title: "Cairn: approval",
    file: "approval.html",
    css: () => "",
  },
];

/**
 * The HTML of one app: its styles and its script inline (the host's CSP allows inline ones and no network).
 * @param {(typeof APPS)[number]} app
 */
export async function buildApp(app) {
  const require = createRequire(join(ROOT, "package.json"));
  const views = {
    ...(await import(join(ROOT, "dist/views/table-style.js"))),
    ...(await import(join(ROOT, "dist/views/lineage-view.js"))),
    ...(await import(join(ROOT, "dist/views/brief-view.js"))),
    ...(await import(join(ROOT, "dist/views/chart-view.js"))),
  };
  const uplotCss = readFileSync(require.resolve("uplot/dist/uPlot.min.css"), "utf8");
  const script = (await bundle(app.entry)).replaceAll("</script", "<\\/script");
  const style = `${views.THEMED_PALETTE_CSS}${APP_CSS}${app.css(views, uplotCss)}`.replaceAll("</style", "<\\/style");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${app.title}</title><style>${style}</style></head>
<body><main id="app"><p class="note">Waiting for the tool's result…</p></main>
<script>${script}</script></body></html>
`;
}

/**
 * One browser entry of src/apps/ and what it imports, minified into one script.
 * @param {string} entry
 */
async function bundle(entry) {
  const built = await build({
    entryPoints: [join(ROOT, entry)],
    bundle: true,
    minify: true,
    format: "iife",
    target: "es2022",
    write: false,
    legalComments: "none",
    nodePaths: (process.env.NODE_PATH ?? "").split(":").filter(Boolean),
  });
  return built.outputFiles[0]?.text ?? "";
}

/** Where the web view's built assets go (ui/built-assets.ts reads them), and their files. */
export const UI_ASSETS = { dir: "dist/ui-assets", script: "chart.js", style: "chart.css" };

/** The web view's chart script (ui-chart.ts, chart.ts, uPlot) and uPlot's stylesheet. */
export async function buildUiAssets() {
  const require = createRequire(join(ROOT, "package.json"));
  return {
    script: await bundle("src/apps/ui-chart.ts"),
    style: readFileSync(require.resolve("uplot/dist/uPlot.min.css"), "utf8"),
  };
}

async function main() {
  const out = join(ROOT, "dist/apps");
  mkdirSync(out, { recursive: true });
  for (const app of APPS) {
    const page = await buildApp(app);
    const bytes = Buffer.byteLength(page);
    if (bytes > APP_BYTES) throw new Error(`the ${app.name} app is ${bytes} bytes, over its ${APP_BYTES}-byte budget`);
    writeFileSync(join(out, app.file), page);
    console.log(`dist/apps/${app.file}: ${(bytes / 1024).toFixed(1)} KB of ${APP_BYTES / 1024} KB`);
  }
  const assets = await buildUiAssets();
  mkdirSync(join(ROOT, UI_ASSETS.dir), { recursive: true });
  for (const [file, text] of /** @type {[string, string][]} */ ([
    [UI_ASSETS.script, assets.script],
    [UI_ASSETS.style, assets.style],
  ])) {
    const bytes = Buffer.byteLength(text);
    if (bytes > APP_BYTES)
      throw new Error(`the web view's ${file} is ${bytes} bytes, over its ${APP_BYTES}-byte budget`);
    writeFileSync(join(ROOT, UI_ASSETS.dir, file), text);
    console.log(`${UI_ASSETS.dir}/${file}: ${(bytes / 1024).toFixed(1)} KB of ${APP_BYTES / 1024} KB`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
