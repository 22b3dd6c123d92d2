// Types of ui-scale.mjs for the TypeScript tests.
import type { Page } from "playwright-core";

export const SCALE: { artifacts: number; namespaces: number; parts: number };
export const PAGE_LOAD_TARGET_MS: number;
export const SCALE_PAGES: readonly { label: string; path: string; follow?: string }[];
export function populateScaleWorkspace(dir: string, options: { artifacts?: number; scratch: string }): Promise<void>;
export function pageLoadTimes(page: Page, url: string, loads: number): Promise<number[]>;
export function timeScalePages(
  page: Page,
  origin: string,
  loads: number,
): Promise<{ label: string; path: string; times: number[] }[]>;
