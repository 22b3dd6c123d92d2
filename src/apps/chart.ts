/// <reference lib="dom" />
// The chart of a table's numeric columns, drawn with uPlot (canvas, 51 KB minified, bundled: no network) from the
// choice and the points views/chart-view.ts makes of the rows shown. Both draw it: the table app, and the web view's
// chart script (ui-chart.ts).
import uPlot from "uplot";
import { type ChartChoice, chartDescription, chartSeries } from "../views/chart-view.js";

/** Series colours, distinct in light and dark, each over 3:1 against both backgrounds (WCAG 1.4.11). */
const COLOURS = ["#2563eb", "#d9480f", "#2f9e44", "#ae3ec9"];
/** Characters of a bar's label drawn; the table holds the whole text. */
const LABEL_CHARS = 14;

export interface DrawnChart {
  destroy(): void;
  /** What the chart shows, in words (the canvas's accessible name). */
  description: string;
}

/** Draws `choice` over `rows` into `target`, `width` pixels wide; undefined when no row has a number to draw. */
export function drawChart(
  target: HTMLElement,
  choice: ChartChoice,
  rows: readonly Record<string, unknown>[],
  width: number,
): DrawnChart | undefined {
  const ink = getComputedStyle(document.documentElement).getPropertyValue("--muted").trim() || "#555";
  const grid = getComputedStyle(document.documentElement).getPropertyValue("--line").trim() || "#ddd";
  const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  const drawn = chartSeries(choice, rows);
  if (drawn === undefined) return undefined;
  const { xs, ys, labels } = drawn;
  const series: uPlot.Series[] = [{ label: choice.x }];
  // A series ten times smaller or larger than the first gets its own scale and axis on the right, or it draws flat.
  const peak = (values: (number | null)[]) => Math.max(0, ...values.map((v) => Math.abs(v ?? 0)));
  const first = peak(ys[0] ?? []);
  const scaleOf = ys.map((values, i) => {
    const p = peak(values);
    return i > 0 && first > 0 && p > 0 && (p / first > 10 || first / p > 10) ? "y2" : "y";
  });
  choice.y.forEach((name, i) => {
    const colour = COLOURS[i % COLOURS.length] as string;
    const scale = scaleOf[i] as string;
    if (choice.kind === "bar") {
      const bars = uPlot.paths.bars?.({ size: [0.8 / choice.y.length, 80], align: 0 });
      series.push({
        label: name,
        scale,
        stroke: colour,
        fill: `${colour}cc`,
        width: 1,
        paths: bars,
        points: { show: false },
      });
    } else if (choice.kind === "scatter") {
      series.push({
        label: name,
        scale,
        stroke: colour,
        fill: colour,
        paths: () => null,
        // Filled dots: uPlot's default hollow rings of 1 px are too faint to read against the grid.
        points: { show: true, size: 7, width: 1, stroke: colour, fill: colour },
      });
    } else {
      series.push({ label: name, scale, stroke: colour, width: 2, points: { show: xs.length <= 60 } });
    }
  });
  // Labels turn when they would overlap: many bars, or labels wider than a bar's slot (about 7 px a character, the
  // value axis taking some 60 px of the width).
  const longest = Math.max(0, ...labels.map((label) => Math.min(label.length, LABEL_CHARS)));
  const crowded = xs.length > 8 || longest * 7 + 8 > (width - 60) / Math.max(1, xs.length);
  const options: uPlot.Options = {
    width,
    height: 260,
    series,
    // A turned label runs down and to the right of its bar: the last one needs room past the plot.
    ...(choice.kind === "bar" && crowded ? { padding: [null, Math.ceil(longest * 5) + 8, null, null] } : {}),
    scales: {
      x:
        choice.kind === "bar"
          ? { time: false, range: [-0.5, Math.max(0.5, xs.length - 0.5)] }
          : { time: choice.kind === "line" },
      // A bar's length is its value: its axis starts at zero.
      ...(choice.kind === "bar"
        ? {
            y: {
              range: (_u: uPlot, min: number, max: number): uPlot.Range.MinMax => [
                Math.min(0, min),
                Math.max(0, max) * 1.05,
              ],
            },
          }
        : {}),
    },
    axes: [
      choice.kind === "bar"
        ? {
            ...axis,
            splits: () => xs,
            values: (_u: uPlot, splits: number[]) => splits.map((i) => truncate(labels[i] ?? "", LABEL_CHARS)),
            rotate: crowded ? -45 : 0,
            size: crowded ? 80 : 40,
          }
        : { ...axis, label: choice.x },
      { ...axis, size: valueAxisSize, label: choice.y.length === 1 ? choice.y[0] : undefined },
      ...(scaleOf.includes("y2")
        ? [
            {
              ...axis,
              scale: "y2",
              side: 1,
              size: valueAxisSize,
              grid: { show: false },
              label: choice.y.filter((_, i) => scaleOf[i] === "y2").join(", "),
            },
          ]
        : []),
    ],
    legend: { show: true },
    cursor: { drag: { x: false, y: false } },
  };
  const plot = new uPlot(options, [xs, ...ys] as uPlot.AlignedData, target);
  const description = chartDescription(choice, xs.length);
  const canvas = target.querySelector("canvas");
  canvas?.setAttribute("role", "img");
  canvas?.setAttribute("aria-label", description);
  return { destroy: () => plot.destroy(), description };
}

/** Room for the longest tick label of a value axis (uPlot's default cuts "600,000" to "0,000"). */
function valueAxisSize(_u: uPlot, values: string[] | null): number {
  const longest = Math.max(1, ...(values ?? []).map((v) => v.length));
  return Math.ceil(longest * 7.5 + 24);
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
