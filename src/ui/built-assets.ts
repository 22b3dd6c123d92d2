// The web view's assets that `npm run build` bundles rather than tsc (scripts/build-apps.mjs): the chart script
// (uPlot with the table app's drawing) and uPlot's stylesheet, read from dist/ui-assets/ once per process. A view
// started from an unbuilt tree has no chart script: its pages still render, their figures say the table holds the rows.
import { readFile } from "node:fs/promises";

export const CHART_SCRIPT_PATH = "/assets/chart.js";
export const CHART_STYLE_PATH = "/assets/chart.css";

const FILES: Record<string, { file: string; type: string }> = {
  [CHART_SCRIPT_PATH]: { file: "chart.js", type: "text/javascript; charset=utf-8" },
  [CHART_STYLE_PATH]: { file: "chart.css", type: "text/css; charset=utf-8" },
};

/** dist/ui-assets beside dist/ui, or, run from src/ui in tests, the build's. */
const DIRS = [new URL("../ui-assets/", import.meta.url), new URL("../../dist/ui-assets/", import.meta.url)];

const cache = new Map<string, { type: string; body: string }>();

export function isBuiltAsset(path: string): boolean {
  return Object.hasOwn(FILES, path);
}

/** The asset at `path` with its media type; undefined when the build did not write it (or `path` is none). */
export async function builtAsset(path: string): Promise<{ type: string; body: string } | undefined> {
  if (!Object.hasOwn(FILES, path)) return undefined;
  const known = FILES[path] as { file: string; type: string };
  const cached = cache.get(path);
  if (cached !== undefined) return cached;
  for (const dir of DIRS) {
    const body = await readFile(new URL(known.file, dir), "utf8").catch(() => undefined);
    if (body === undefined) continue;
    const asset = { type: known.type, body };
    cache.set(path, asset);
    return asset;
  }
  return undefined;
}
