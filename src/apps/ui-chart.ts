/// <reference lib="dom" />
// The web view's chart script (/assets/chart.js, bundled with uPlot by scripts/build-apps.mjs): draws each chart
// figure of a page from its JSON data island with the table app's drawing (chart.ts), and draws it anew when its
// width changes (a bar chart's labels turn on a narrow screen). A same-origin script under the web view's CSP; without it a figure keeps its caption and its note
// that the table below holds the same rows.
import type { ChartIsland } from "../views/chart-view.js";
import { drawChart } from "./chart.js";

/** The plot's width in pixels; uPlot draws at a fixed width, never below 240. */
function widthOf(plot: HTMLElement): number {
  return Math.max(240, Math.floor(plot.clientWidth));
}

for (const plot of document.querySelectorAll<HTMLElement>(".chart-plot[data-island]")) {
  const island = document.getElementById(plot.dataset.island ?? "");
  if (island === null) continue;
  const { choice, rows } = JSON.parse(island.textContent ?? "null") as ChartIsland;
  plot.replaceChildren();
  let width = widthOf(plot);
  let chart = drawChart(plot, choice, rows, width);
  if (chart === undefined) continue;
  new ResizeObserver(() => {
    const now = widthOf(plot);
    if (now === width) return;
    width = now;
    chart?.destroy();
    chart = drawChart(plot, choice, rows, now);
  }).observe(plot);
}
