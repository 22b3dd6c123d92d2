// Shared fixtures of the query tests: vega-datasets paths, generated files, and an error-code matcher.
// Generated files are written with node:fs only, so a broken engine cannot produce its own fixtures.

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect } from "vitest";
import { CairnError } from "../../src/errors.js";
import type { QueryInput, QueryLimits } from "../../src/query/query-engine.js";

export const VEGA = resolve(import.meta.dirname, "../../node_modules/vega-datasets/data");
export const FLIGHTS: QueryInput = { path: join(VEGA, "flights-3m.parquet"), format: "parquet" };
export const AIRPORTS: QueryInput = { path: join(VEGA, "airports.csv"), format: "csv" };
export const MOVIES: QueryInput = { path: join(VEGA, "movies.json"), format: "json" };

export const LIMITS: QueryLimits = { maxPreviewRows: 25, maxPreviewBytes: 7680, timeoutMs: 15_000 };

export function makeTempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `cairn-${prefix}-`));
}

export function writeFixture(dir: string, name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** A CSV of `columns` columns named col_1..col_N and a few rows. */
export function wideCsv(columns: number, rows = 3): string {
  const header = Array.from({ length: columns }, (_, i) => `col_${i + 1}`).join(",");
  const lines = Array.from({ length: rows }, (_, r) =>
    Array.from({ length: columns }, (_, c) => r * columns + c).join(","),
  );
  return `${header}\n${lines.join("\n")}\n`;
}

/** Awaits a rejection and checks it is a CairnError with `code`; returns it for more checks. */
export async function rejectsWith(promise: Promise<unknown>, code: string): Promise<CairnError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a ${code} rejection`).toBeInstanceOf(CairnError);
  const error = caught as CairnError;
  expect(error.code, error.message).toBe(code);
  return error;
}
