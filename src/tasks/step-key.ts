// The step-result cache key, and which steps may be reused at all. A key binds everything the result depends on:
// the exact SQL or snippet source, typed parameters, the ordered inputs by content digest and reader settings, the
// engine and its version. Only steps classified deterministic get one; others still run, every time.
import { createHash } from "node:crypto";
import { duckdbVersion } from "../query/duckdb-query-engine.js";
import type { StepInput } from "./definition.js";

/** What the key of one step's inputs holds for each: the bytes (by digest) and how they are read. */
export interface KeyedInput {
  sha256: string;
  format: string;
  columnTypes?: Record<string, string> | undefined;
  /**
   * What a code step sees of the input besides its content: a source's alias, id, name, version and kind, an
   * earlier step's name. A snippet can return any of it, so a code step's key holds it; SQL sees the bytes only.
   */
  identity?: Record<string, unknown> | undefined;
}

/** Bumped when what a step computes from the same key could change (result layout, preview rules). */
const KEY_FORMAT = 1;

/**
 * Functions and clauses whose result is not a function of the inputs: random values, the clock, sequences,
 * settings, sampling. Matched as whole words outside string literals, quoted identifiers and comments.
 */
const NONDETERMINISTIC = new Set([
  "random",
  "setseed",
  "uuid",
  "gen_random_uuid",
  "uuidv4",
  "uuidv7",
  "now",
  "today",
  "current_date",
  "current_time",
  "current_timestamp",
  "get_current_time",
  "get_current_timestamp",
  "localtime",
  "localtimestamp",
  "transaction_timestamp",
  "statement_timestamp",
  "nextval",
  "currval",
  "current_setting",
  "current_query",
  "current_schema",
  "current_database",
  "sample",
  "tablesample",
  "reservoir_quantile",
  "getenv",
  "txid_current",
]);

/** Why a SQL step is not reused (a word it uses), or undefined when it qualifies. */
export function nondeterministicSql(sql: string): string | undefined {
  for (const word of sqlWords(sql)) {
    if (NONDETERMINISTIC.has(word)) return word;
  }
  return undefined;
}

/** Lower-cased bare words of `sql`, skipping string literals, quoted identifiers and comments. */
function* sqlWords(sql: string): Generator<string> {
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i] as string;
    if (c === "'" || c === '"') {
      i++;
      while (i < n) {
        if (sql[i] === c) {
          if (sql[i + 1] === c) i += 2;
          else break;
        } else i++;
      }
      i++;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end === -1 ? n : end + 1;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end === -1 ? n : end + 2;
    } else if (/[A-Za-z_]/.test(c)) {
      const start = i;
      while (i < n && /[A-Za-z0-9_$]/.test(sql[i] as string)) i++;
      yield sql.slice(start, i).toLowerCase();
    } else {
      i++;
    }
  }
}

/**
 * The cache key of a step over `inputs`, or why the step is not reused: SQL using a non-deterministic function, a
 * snippet that does not declare itself pure.
 */
export function stepKey(step: StepInput, inputs: readonly KeyedInput[]): { key: string } | { reason: string } {
  if (step.sql !== undefined) {
    const word = nondeterministicSql(step.sql);
    if (word !== undefined) return { reason: `its SQL uses ${word}, whose result is not a function of the inputs` };
  } else if (step.pure !== true) {
    return { reason: "a code step is reused only when it declares pure: true" };
  }
  const material = {
    format: KEY_FORMAT,
    engine: step.sql !== undefined ? `duckdb ${duckdbVersion()}` : "quickjs",
    sql: step.sql ?? null,
    code: step.code ?? null,
    // JSON keeps each parameter's type: 50 and "50" bind differently.
    parameters: step.parameters ?? [],
    inputs: inputs.map((input) =>
      step.sql !== undefined
        ? [input.sha256, input.format, input.columnTypes ?? null]
        : [input.sha256, input.format, input.columnTypes ?? null, input.identity ?? null],
    ),
  };
  return { key: createHash("sha256").update(JSON.stringify(material)).digest("hex") };
}
