/// <reference lib="dom" />
// Test helper: the web view in Debian's headless Chromium (driven by playwright-core), with what every browser test
// needs: the problems a page shows (console errors, uncaught exceptions, failed responses), each page's load time,
// navigation that waits for the next page, what has the focus and whether its ring is drawn, and screenshots.
import { existsSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { SCREENSHOT_DIR } from "./screenshots.js";

export const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface BrowserOptions {
  /** Where the browser keeps its profile (a fresh directory is made inside). */
  dir: string;
  /** `http://127.0.0.1:PORT` of the view. */
  origin: string;
  viewport?: { width: number; height: number };
  /**
   * Whether a response of 400 or more, as "PATH STATUS", is one the test means to get; the others are problems.
   * Without it responses are not watched (console errors still are).
   */
  expectedFailure?: (failed: string) => boolean;
}

/** What has the focus: its tag, id, text, link, whether its focus ring (3px solid outline) is drawn, and whether it is in the lineage graph. */
export interface Focused {
  tag: string;
  id: string;
  text: string;
  href: string;
  ring: boolean;
  inGraph: boolean;
}

export class UiBrowser {
  /** Console errors, uncaught exceptions (a CSP violation is one) and unexpected failed responses of every page. */
  readonly problems: string[] = [];
  /** Navigation time of each page visited, by label, for the log. */
  readonly timings: Record<string, number> = {};

  private constructor(
    readonly context: BrowserContext,
    readonly page: Page,
    private readonly origin: string,
  ) {}

  static async launch(options: BrowserOptions): Promise<UiBrowser> {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does it)`);
    }
    const context = await chromium.launchPersistentContext(mkdtempSync(join(options.dir, "chromium-")), {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: options.viewport ?? { width: 1280, height: 900 },
    });
    const page = context.pages()[0] ?? (await context.newPage());
    const browser = new UiBrowser(context, page, options.origin);
    page.on("console", (message) => {
      // A failed response is logged this way too; responses are checked with their paths below.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
        browser.problems.push(`console: ${message.text()}`);
      }
    });
    const expected = options.expectedFailure;
    if (expected !== undefined) {
      page.on("response", (response) => {
        const failed = `${new URL(response.url()).pathname} ${response.status()}`;
        if (response.status() >= 400 && !expected(failed)) browser.problems.push(`response: ${failed}`);
      });
    }
    page.on("pageerror", (error) => browser.problems.push(`page: ${error.message}`));
    return browser;
  }

  /** Loads `path` and records its load time under `label`. */
  async open(path: string, label: string): Promise<void> {
    await this.page.goto(`${this.origin}${path}`);
    await this.settle(label);
  }

  /** Does what navigates (a click, a key), waits for the page at `path` to load and records its load time. */
  async follow(path: string | RegExp, label: string, action: () => Promise<void>): Promise<void> {
    const url = typeof path === "string" ? `${this.origin}${path}` : path;
    await Promise.all([this.page.waitForURL(url, { waitUntil: "load" }), action()]);
    await this.settle(label);
  }

  /** The load time of the page just loaded, under `label`. */
  async settle(label: string): Promise<void> {
    await this.page.waitForLoadState("load");
    this.timings[label] = await this.page.evaluate(() => {
      const [nav] = performance.getEntriesByType("navigation") as PerformanceNavigationTiming[];
      return Math.round(nav?.duration ?? -1);
    });
  }

  /** Saves a screenshot `name`.png where the run keeps them (docs/ui under `npm run screenshots`). */
  async shot(name: string, fullPage = true): Promise<void> {
    await this.page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage });
  }

  focused(): Promise<Focused> {
    return this.page.evaluate(() => {
      const e = document.activeElement as HTMLElement;
      const style = getComputedStyle(e);
      return {
        tag: e.tagName.toLowerCase(),
        id: e.id,
        text: (e.textContent ?? "").trim(),
        href: e.getAttribute("href") ?? "",
        ring: style.outlineStyle === "solid" && style.outlineWidth === "3px",
        inGraph: e.closest("svg.lineage-graph") !== null,
      };
    });
  }

  /** Presses Tab from where the focus is until it leaves the page (at most 300 times); what got the focus, in order. */
  async tabStops(): Promise<Focused[]> {
    const seen: Focused[] = [];
    for (let i = 0; i < 300; i++) {
      await this.page.keyboard.press("Tab");
      const now = await this.focused();
      if (now.tag === "body") break;
      seen.push(now);
    }
    return seen;
  }

  /** How many elements on the page could take the focus with Tab. */
  focusable(): Promise<number> {
    return this.page.locator("a[href], input, button, select, [tabindex='0']").count();
  }

  /** Every form control on the page and whether a non-empty label (or aria-label) names it. */
  controls(): Promise<{ control: string; labelled: boolean }[]> {
    return this.page.evaluate(() =>
      [
        ...document.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>(
          "input, select, textarea",
        ),
      ]
        .filter((e) => e.type !== "hidden")
        .map((e) => ({
          control: `${e.tagName.toLowerCase()}#${e.id}[name=${e.name}]`,
          labelled:
            [...(e.labels ?? [])].some((l) => (l.textContent ?? "").trim() !== "") ||
            (e.getAttribute("aria-label") ?? "").trim() !== "",
        })),
    );
  }

  async close(): Promise<void> {
    await this.context.close();
  }
}
