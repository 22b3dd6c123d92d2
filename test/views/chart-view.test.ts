// The chart as views/ writes it for the web view and the apps: the choice from column types, the points of the rows
// shown, the caption's words, and the web view's figure whose JSON data island no cell text can break out of.
import { describe, expect, it } from "vitest";
import {
  chartDescription,
  chartFigure,
  chartNumber,
  chartSeries,
  chartTime,
  chooseChart,
} from "../../src/views/chart-view.js";
import { jsonIsland } from "../../src/views/html.js";

describe("chooseChart", () => {
  it.each([
    [
      "a line over a date column",
      [
        { name: "day", type: "DATE" },
        { name: "city", type: "VARCHAR" },
        { name: "n", type: "BIGINT" },
        { name: "p", type: "DOUBLE" },
      ],
      { kind: "line", x: "day", y: ["n", "p"] },
    ],
    [
      "bars of the first number by the first text column",
      [
        { name: "city", type: "VARCHAR" },
        { name: "n", type: "HUGEINT" },
        { name: "p", type: "DECIMAL(10,2)" },
      ],
      { kind: "bar", x: "city", y: ["n"] },
    ],
    [
      "a scatter of two numbers",
      [
        { name: "lat", type: "DOUBLE" },
        { name: "lon", type: "DOUBLE" },
      ],
      { kind: "scatter", x: "lat", y: ["lon"] },
    ],
    ["no chart for one number alone", [{ name: "n", type: "BIGINT" }], undefined],
    ["no chart without numbers", [{ name: "s", type: "VARCHAR" }], undefined],
  ])("draws %s", (_, columns, expected) => {
    expect(chooseChart(columns)).toEqual(expected);
  });

  it("reads exact integers sent as strings and dates as seconds", () => {
    expect(chartNumber("9007199254740993")).toBe(9007199254740992);
    expect(chartNumber("n1")).toBeNull();
    expect(chartNumber(Number.NaN)).toBeNull();
    expect(chartTime("2024-01-02")).toBe(Date.UTC(2024, 0, 2) / 1000);
    expect(chartTime("never")).toBeNull();
  });
});

describe("chartSeries", () => {
  it("draws a line's points in time order, skipping rows without a date, and bars in the rows' order", () => {
    const line = chartSeries({ kind: "line", x: "day", y: ["n"] }, [
      { day: "2024-01-03", n: 3 },
      { day: null, n: 9 },
      { day: "2024-01-01", n: "1" },
    ]);
    expect(line).toEqual({ xs: [Date.UTC(2024, 0, 1) / 1000, Date.UTC(2024, 0, 3) / 1000], ys: [[1, 3]], labels: [] });
    const bars = chartSeries({ kind: "bar", x: "city", y: ["n"] }, [
      { city: "b", n: 2 },
      { city: null, n: 1 },
    ]);
    expect(bars).toEqual({ xs: [0, 1], ys: [[2, 1]], labels: ["b", "NULL"] });
    expect(chartSeries({ kind: "scatter", x: "a", y: ["b"] }, [{ a: 1, b: null }])).toBeUndefined();
    expect(chartDescription({ kind: "scatter", x: "a", y: ["b"] }, 1)).toBe(
      "Scatter plot of b by a, 1 row of the page shown",
    );
  });
});

describe("chartFigure", () => {
  const columns = [
    { name: "city</script>", type: "VARCHAR" },
    { name: "n", type: "BIGINT" },
  ];
  const hostile = ["</script><script>alert(1)</script>", "<!-- x", "a\u2028b\u2029c", "]]>&amp;", "\ud800"];

  it("holds the rows drawn in a data island that nothing ends early, and gives them back exactly", () => {
    const rows = hostile.map((city, i) => ({ "city</script>": city, n: i, other: "<b>not drawn</b>" }));
    const markup = chartFigure(columns, rows, "chart")?.toString() ?? "";
    const inner = /<script type="application\/json" id="chart-data">([^<]*)<\/script>/.exec(markup)?.[1];
    expect(inner).toBeDefined();
    expect(inner).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(inner as string)).toEqual({
      choice: { kind: "bar", x: "city</script>", y: ["n"] },
      rows: rows.map((r) => ({ "city</script>": r["city</script>"], n: r.n })),
    });
    // The island is the only script: the caption and the note are escaped text.
    expect(markup.match(/<script/g)).toHaveLength(1);
    expect(markup).toContain(
      '<figcaption id="chart-caption">Bar chart of n by city&lt;/script&gt;, 5 rows of the page shown</figcaption>',
    );
  });

  it("cuts a label past CELL_CHARS in the island as the table cuts its cell, never inside a character", () => {
    const long = "x".repeat(999) + "\ud83d\ude00".repeat(600_000);
    const rows = [
      { "city</script>": long, n: 1 },
      { "city</script>": "y".repeat(1000), n: 2 },
    ];
    const markup = chartFigure(columns, rows, "chart")?.toString() ?? "";
    expect(markup.length).toBeLessThan(20_000);
    const inner = /<script type="application\/json" id="chart-data">([^<]*)<\/script>/.exec(markup)?.[1];
    const island = JSON.parse(inner as string) as { rows: Record<string, unknown>[] };
    expect(island.rows.map((r) => r["city</script>"])).toEqual([`${"x".repeat(999)}…`, "y".repeat(1000)]);
  });

  it("draws nothing for text alone, one number alone, or a page without a number", () => {
    expect(chartFigure([{ name: "s", type: "VARCHAR" }], [{ s: "a" }], "chart")).toBeUndefined();
    expect(chartFigure([{ name: "n", type: "BIGINT" }], [{ n: 1 }], "chart")).toBeUndefined();
    expect(chartFigure(columns, [{ "city</script>": "a", n: null }], "chart")).toBeUndefined();
  });

  it("writes any JSON value as an island JSON.parse reads back", () => {
    for (const value of [null, 0, "</SCRIPT >", ["<!--", "-->"], { "\u2028": "&lt;" }]) {
      const text = jsonIsland("i", value).toString();
      expect(text.slice(0, 39)).toBe('<script type="application/json" id="i">');
      expect(JSON.parse(text.slice(39, -9))).toEqual(value);
      expect(text.slice(39, -9)).not.toMatch(/[<>&\u2028\u2029]/);
    }
  });
});
