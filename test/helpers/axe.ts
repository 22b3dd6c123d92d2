/// <reference lib="dom" />
// Accessibility checks in the browser tests: axe-core (Deque's rules engine) run in the page against WCAG 2.1 A and
// AA. The page's CSP does not apply to what the test evaluates through the DevTools protocol, so no page needs to
// allow the script.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Frame, Page } from "playwright-core";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

interface AxeResults {
  violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[];
}

/** axe-core's WCAG 2.1 A/AA violations on the page (or an app's frame) as loaded: "rule (impact): help [first targets]". */
export async function accessibilityViolations(page: Page | Frame): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate(
    () =>
      (window as unknown as { axe: { run(context: Document, options: object): Promise<AxeResults> } }).axe.run(
        document,
        { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] }, resultTypes: ["violations"] },
      ) as Promise<AxeResults>,
  );
  return results.violations.map(
    (v) =>
      `${v.id} (${v.impact ?? "?"}): ${v.help} [${v.nodes
        .slice(0, 3)
        .map((n) => n.target.join(" "))
        .join(", ")}]`,
  );
}
