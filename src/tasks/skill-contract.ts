// A skill's contract and its pure rules: what a bound source must be and how a found one is compared (every
// mismatch named with its fix), skill refs (name@version), and skill_find's ranking. No I/O: the service is skills.ts.
import { CairnError, ErrorCode } from "../errors.js";
import type { QueryColumn, QueryInputFormat } from "../query/query-engine.js";

export const SKILL_LIMITS = {
  /** Skills skill_find answers at most, and by default. */
  find: 50,
  findDefault: 10,
  /** Columns a table contract holds at most (one describe page). */
  columns: 1000,
  /** Column mismatches named per source before the rest are counted. */
  mismatchesPerSource: 5,
} as const;

/** Skill names: one segment, like task names, so `name@version` is unambiguous. */
export const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** What a source bound to the skill must be. */
export interface SourceContract {
  kind: string;
  media_type: string;
  /** Table sources: the format DuckDB reads it as. */
  format?: QueryInputFormat | undefined;
  /**
   * The exact ordered columns, with the plan's csv_types applied; absent for text sources and for a JSON source no
   * SQL step reads that DuckDB cannot read as a table (then kind and media type are the contract).
   */
  columns?: QueryColumn[] | undefined;
}

/** What a bound source turned out to be: its record and, for a table, the columns DuckDB reads. */
export interface FoundSource {
  kind: string;
  media_type: string;
  format?: QueryInputFormat | undefined;
  columns?: QueryColumn[] | undefined;
  /** Set when DuckDB cannot read it as a table (the reason, for the message). */
  unreadable?: string | undefined;
}

/**
 * Where `found` breaks `contract`: one problem naming the source (its alias and what it is bound to), each position
 * that differs with the column and type expected and found, and the fix; empty when it fits. Kinds and media types
 * (without parameters) must be equal; a table must have exactly the contract's columns, names and SQL types, in order.
 */
export function contractProblems(source: string, contract: SourceContract, found: FoundSource): string[] {
  const expected = describeKind(contract);
  const got = describeKind(found);
  if (contract.kind !== found.kind || essence(contract.media_type) !== essence(found.media_type)) {
    const what =
      contract.format !== undefined
        ? `a ${contract.format.toUpperCase()} table with the columns the skill reads`
        : `a ${contract.kind} of the same media type`;
    return [`source ${source}: the skill expects ${expected}, found ${got}: bind ${what} (import it first)`];
  }
  if (found.unreadable !== undefined) return [`source ${source}: ${found.unreadable}`];
  if (contract.columns === undefined) return [];
  const want = contract.columns;
  const have = found.columns ?? [];
  const problems: string[] = [];
  let left = 0;
  for (let i = 0; i < Math.max(want.length, have.length); i++) {
    const w = want[i];
    const h = have[i];
    if (w !== undefined && h !== undefined && w.name === h.name && w.type === h.type) continue;
    if (problems.length === SKILL_LIMITS.mismatchesPerSource) {
      left += 1;
      continue;
    }
    problems.push(`column ${i + 1} expected ${columnText(w)}, found ${columnText(h)}`);
  }
  if (problems.length === 0) return [];
  const reordered =
    want.length === have.length &&
    [...want.map((c) => `${c.name} ${c.type}`)].sort().join("\n") ===
      [...have.map((c) => `${c.name} ${c.type}`)].sort().join("\n");
  const more = left > 0 ? ` (and ${left} more)` : "";
  const hint = reordered ? "the same columns in another order; " : "";
  return [
    `source ${source}: ${problems.join("; ")}${more}: ${hint}bind a version whose columns are exactly ${columnList(want)} in this order (reshape the file and import it again; a CSV column's type is what DuckDB detects)`,
  ];
}

function describeKind(source: { kind: string; media_type: string; format?: QueryInputFormat | undefined }): string {
  return source.format !== undefined
    ? `a ${source.kind} table (${source.media_type})`
    : `a ${source.kind} (${source.media_type}), not a table`;
}

/** The first columns, enough to recognise a schema in a message. */
function columnList(columns: QueryColumn[]): string {
  const shown = columns.slice(0, 20).map((c) => `${c.name} ${c.type}`);
  return columns.length > shown.length ? `${shown.join(", ")}, ... (${columns.length} in all)` : shown.join(", ");
}

function columnText(column: QueryColumn | undefined): string {
  return column === undefined ? "no column" : `${column.name} ${column.type}`;
}

/** A media type without its parameters, lower case: `text/csv; charset=utf-8` is `text/csv`. */
function essence(mediaType: string): string {
  return (mediaType.split(";")[0] ?? "").trim().toLowerCase();
}

/** A name, or `name@version`. */
export function parseSkillRef(ref: string): { name: string; version?: number } {
  const at = /^(.+)@([0-9]{1,9})$/.exec(ref);
  const name = at === null ? ref : (at[1] as string);
  if (!SKILL_NAME.test(name)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `skill ref ${JSON.stringify(ref.slice(0, 80))} must be a skill name or name@version (skill_find lists them)`,
    );
  }
  return at === null ? { name } : { name, version: Number(at[2]) };
}

/**
 * skill_find's ranking: each query word (lower case, split on anything but letters and digits) scores 3 when it
 * matches a word of the skill's name, 2 a word of a step name, 1 a word of the objective (`matches`: a prefix either
 * way); a skill scores the sum over the query's words, and one scoring 0 is left out. Ties go to the newest. No query
 * lists the newest first.
 */
export function rankSkills<T extends { name: string; objective: string; steps: string[]; created_at: string }>(
  skills: T[],
  query: string,
): (T & { score: number })[] {
  const terms = [...new Set(wordsOf(query))];
  if (terms.length === 0) return skills.map((s) => ({ ...s, score: 0 }));
  const scored = skills.map((skill) => {
    const fields: [string[], number][] = [
      [wordsOf(skill.name), 3],
      [skill.steps.flatMap(wordsOf), 2],
      [wordsOf(skill.objective), 1],
    ];
    let score = 0;
    for (const term of terms) {
      for (const [words, weight] of fields) if (words.some((w) => matches(w, term))) score += weight;
    }
    return { ...skill, score };
  });
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || b.created_at.localeCompare(a.created_at) || a.name.localeCompare(b.name));
}

/** A word matches a query term it starts with, or that starts with it when it has 4+ characters (spend, spending). */
function matches(word: string, term: string): boolean {
  return word.startsWith(term) || (word.length >= 4 && term.startsWith(word));
}

function wordsOf(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== "");
}
