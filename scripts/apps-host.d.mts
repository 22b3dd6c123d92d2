// Types of apps-host.mjs for the TypeScript tests.
import type { Frame, Page } from "playwright-core";

export const CHROMIUM: string;
export function appCsp(
  csp: { connectDomains?: string[]; resourceDomains?: string[]; frameDomains?: string[] } | undefined,
): string;

export interface AppsHost {
  page: Page;
  /** The app's tools/call requests, in order. */
  calls: { name: string; arguments?: Record<string, unknown> }[];
  /** Console errors and page errors of the host page and the app. */
  problems: string[];
  /** Every URL the page and the app requested. */
  requests: string[];
  origin: string;
  /** The app's frame (its document, for locators and axe). */
  frame(): Frame;
  /** Renders the app for one tool call; milliseconds from the frame's creation to each stage. */
  render(
    input: Record<string, unknown>,
    result: unknown,
    theme?: string,
  ): Promise<{ started: number; initialized: number; result: number; rendered: number }>;
  /** A full-page screenshot once the app's frame has painted all of its drawing. */
  screenshot(path: string): Promise<void>;
  close(): Promise<void>;
}

export function startAppsHost(options: {
  appHtml: string;
  csp: Record<string, string[]> | undefined;
  callTool: (params: { name: string; arguments?: Record<string, unknown> }) => Promise<unknown>;
  viewport?: { width: number; height: number };
}): Promise<AppsHost>;
