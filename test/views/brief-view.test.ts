// The brief's drawing, shared by the web view's run page and the task brief app (decision 0312): the same tables
// whichever links the caller passes, versions drawn as the caller's links, values kept as text, changed rows paged.
import { describe, expect, it } from "vitest";
import { type BriefLinks, changesTable, sourcesTable, stepsTable, type ViewBrief } from "../../src/views/brief-view.js";
import { html } from "../../src/views/html.js";
import { changedRowsTable, changesWords } from "../../src/views/row-changes-view.js";

const brief: ViewBrief = {
  task: "stores",
  run_id: "run_2",
  status: "succeeded",
  current: false,
  sources: [{ alias: "stores", name: "stores/targets", version: 1, artifact_id: "ws_src1", current: false }],
  steps: [
    {
      name: "vs_target",
      status: "computed",
      artifact_id: "ws_step2",
      version: 2,
      row_count: 15,
      changes: {
        since: { artifact_id: "ws_step1", version: 1 },
        by: "key",
        key: ["store"],
        added: 0,
        removed: 0,
        changed: 1,
        rows: [{ change: "changed", key: { store: "<b>s11</b>" }, before: { sales: 150 }, after: { sales: 50 } }],
      },
    },
  ],
};

const links = (kind: string): BriefLinks => ({
  version: (ref, text) => html`<${kind} data-ref="${ref}">${text}</${kind}>`,
  since: (_b, _s, changes) =>
    html`since <${kind} data-ref="${changes.since.artifact_id}">v${changes.since.version}</${kind}>`,
});

describe("the brief's tables", () => {
  it("draw every version through the caller's links, and the same text whichever links they are", () => {
    const asLinks = `${sourcesTable(brief, links("a"))}${stepsTable(brief, links("a"))}`;
    const asButtons = `${sourcesTable(brief, links("button"))}${stepsTable(brief, links("button"))}`;
    expect([...asLinks.matchAll(/data-ref="([^"]+)"/g)].map((m) => m[1])).toEqual([
      "ws_src1",
      "stores/targets",
      "ws_step2",
      "ws_step1",
    ]);
    const text = (markup: string) => markup.replace(/<[^>]+>/g, "");
    expect(text(asButtons)).toBe(text(asLinks));
    expect(text(asLinks)).toContain("moved since current version of stores/targets");
    expect(text(asLinks)).toContain("1 changed, 0 added, 0 removed (rows matched on store) since v1");
  });

  it("keep a changed row's values as text, and caption a later page by its range", () => {
    const markup = changesTable(brief, brief.steps[0] as ViewBrief["steps"][number], "c").toString();
    expect(markup).toContain("&lt;b&gt;s11&lt;/b&gt;");
    expect(markup).not.toContain("<b>");
    expect(markup).toContain("What changed in step vs_target of stores since v1: 1 change");
    const rows = Array.from({ length: 3 }, (_, i) => ({ change: "added" as const, after: { id: i } }));
    expect(changedRowsTable(rows, 10, "Rows", "r").toString()).toContain("Rows: the first 3 changes of 10");
    expect(changedRowsTable(rows, 10, "Rows", "r", 6).toString()).toContain("Rows: changes 7–9 of 10");
    expect(changesWords({ unavailable: "INVALID_ARGUMENT: no column in common" })).toBe(
      "not compared: INVALID_ARGUMENT: no column in common",
    );
  });
});
