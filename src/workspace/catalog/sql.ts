// The catalog's one SQL port (decision 0270): statements written once as tagged templates, and rules written once as
// generators that yield each statement and receive its answer. SQLite drives a rule synchronously inside one
// better-sqlite3 transaction, so a transaction never yields to the event loop and nothing can interleave on its one
// connection; PostgreSQL drives the same rule asynchronously inside a pooled transaction. Engine-neutral: no driver.

/** One SQL statement (or a fragment of one): text written once, values bound as parameters by each engine. */
export class Statement {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

/**
 * A statement from a template: each `${value}` is a bound parameter (`?` on SQLite, `$n` on PostgreSQL), except a
 * nested Statement, which is spliced in with its own parameters. Write SQL both engines take: `CAST(x AS TEXT)`, not
 * `x::text`.
 */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Statement {
  return new Statement(strings, values);
}

/** The empty fragment (a condition left out). */
export const NOTHING = new Statement([""], []);

/** A fragment the engines spell differently: each engine splices its own. */
export class Spelling {
  constructor(
    readonly sqlite: Statement,
    readonly postgres: Statement,
  ) {}
}

/** A fragment spelled once per engine, for what their SQL truly spells otherwise (JSON functions, arrays, collations). */
export function byDialect(spellings: { sqlite: Statement; postgres: Statement }): Spelling {
  return new Spelling(spellings.sqlite, spellings.postgres);
}

/**
 * After a text column: byte order for comparisons and ORDER BY (ISO 8601 times, day keys), which SQLite's BINARY
 * collation is and PostgreSQL's default collation is not.
 */
export const BYTEWISE = byDialect({ sqlite: NOTHING, postgres: sql`COLLATE "C"` });

/**
 * After a text column: matches any of `values`, bound as one parameter (one statement text whatever their count; a
 * single value is a plain `= ?`, which both engines look up more cheaply).
 */
export function inTexts(values: readonly string[]): Statement | Spelling {
  if (values.length === 1) return sql`= ${values[0]}`;
  return byDialect({
    sqlite: sql`IN (SELECT value FROM json_each(${JSON.stringify(values)}))`,
    postgres: sql`= ANY(CAST(${values} AS TEXT[]))`,
  });
}

/** After an integer column: matches any of `values`, bound as one parameter (a single value as `= ?`). */
export function inIntegers(values: readonly number[]): Statement | Spelling {
  if (values.length === 1) return sql`= ${values[0]}`;
  return byDialect({
    sqlite: sql`IN (SELECT value FROM json_each(${JSON.stringify(values)}))`,
    postgres: sql`= ANY(CAST(${values} AS BIGINT[]))`,
  });
}

/**
 * `values` as a table to select from (follow it with an alias): `value`, and `position` from 0 in the given order,
 * bound as one parameter.
 */
export function textRows(values: readonly string[]): Spelling {
  return byDialect({
    sqlite: sql`(SELECT key AS position, value FROM json_each(${JSON.stringify(values)}))`,
    postgres: sql`(SELECT ordinality - 1 AS position, value
      FROM unnest(CAST(${values} AS TEXT[])) WITH ORDINALITY AS given (value, ordinality))`,
  });
}

/** The rows the queries have in common (one query or more, each of the same columns). */
export function intersect(queries: readonly Statement[]): Statement {
  return new Statement(["", ...queries.slice(1).map(() => " INTERSECT "), ""], queries);
}

/** The engines a rule runs on. */
export type Dialect = "sqlite" | "postgres";

/**
 * What a rule asks its engine for: the rows of a statement, or how many rows it wrote (or matched); or (`outside`)
 * work outside the database that the transaction waits for, holding its locks (only in `CatalogSql.hold`).
 */
export type Step =
  | { readonly kind: "rows" | "run"; readonly statement: Statement }
  | { readonly kind: "outside"; readonly work: () => Promise<unknown> };

/** A rule of the catalog: it yields statements, receives their answers, and returns its result. */
export type Rule<T> = Generator<Step, T, unknown>;

/** Inside a rule: the rows of `statement`. */
export function* rows<R>(statement: Statement): Generator<Step, R[], unknown> {
  return (yield { kind: "rows", statement }) as R[];
}

/** Inside a rule: the first row of `statement`, or undefined. */
export function* one<R>(statement: Statement): Generator<Step, R | undefined, unknown> {
  return ((yield { kind: "rows", statement }) as R[])[0];
}

/** Inside a rule: the rows `statement` wrote or matched. */
export function* run(statement: Statement): Generator<Step, number, unknown> {
  return (yield { kind: "run", statement }) as number;
}

/**
 * Inside a rule run by `CatalogSql.hold`: awaits `work` (done outside the database, such as removing a blob) while the
 * transaction keeps its locks, and receives its result or its error. PostgreSQL may run the whole rule again after a
 * lost connection, so `work` must be safe to repeat.
 */
export function* outside<T>(work: () => Promise<T>): Generator<Step, T, unknown> {
  return (yield { kind: "outside", work }) as T;
}

/**
 * The statement as `dialect` takes it: text with its placeholders and the values in order. A statement without
 * fragments compiles once per call site (its template's strings are the cache key).
 */
export function compile(statement: Statement, dialect: Dialect): { text: string; values: unknown[] } {
  const nested = statement.values.some((v) => v instanceof Statement || v instanceof Spelling);
  if (!nested) {
    const cache = dialect === "sqlite" ? SQLITE_TEXT : POSTGRES_TEXT;
    let text = cache.get(statement.strings);
    if (text === undefined) {
      text = placeholders(statement.strings, dialect);
      cache.set(statement.strings, text);
    }
    return { text, values: statement.values.map((v) => bound(v, dialect)) };
  }
  // A nested statement's text depends only on which templates it splices where, so it is compiled once per shape: the
  // walk gathers the values and the shape (each template's id, a plain value as -1, a template's end as 0), and the
  // text comes from the cache after the first time.
  const values: unknown[] = [];
  const shape: number[] = [];
  const walk = (s: Statement) => {
    shape.push(templateId(s.strings));
    for (const value of s.values) {
      if (value instanceof Statement) walk(value);
      else if (value instanceof Spelling) walk(value[dialect]);
      else {
        values.push(bound(value, dialect));
        shape.push(-1);
      }
    }
    shape.push(0);
  };
  walk(statement);
  const cache = dialect === "sqlite" ? SQLITE_SHAPES : POSTGRES_SHAPES;
  const key = shape.join(",");
  let text = cache.get(key);
  if (text === undefined) {
    text = placeholders(spliced(statement, dialect), dialect);
    if (cache.size >= MAX_SHAPES) cache.clear();
    cache.set(key, text);
  }
  return { text, values };
}

/** The template strings of `statement` with its nested statements spliced in, one string between each value. */
function spliced(statement: Statement, dialect: Dialect): string[] {
  const strings: string[] = [""];
  const append = (s: Statement) => {
    s.strings.forEach((part, i) => {
      strings[strings.length - 1] += part;
      if (i >= s.values.length) return;
      const value = s.values[i];
      if (value instanceof Statement) append(value);
      else if (value instanceof Spelling) append(value[dialect]);
      else strings.push("");
    });
  };
  append(statement);
  return strings;
}

/** Template strings arrays by a number of their own (a template literal's strings are one object per call site). */
const TEMPLATE_IDS = new WeakMap<readonly string[], number>();
let templates = 0;
function templateId(strings: readonly string[]): number {
  let id = TEMPLATE_IDS.get(strings);
  if (id === undefined) {
    id = ++templates;
    TEMPLATE_IDS.set(strings, id);
  }
  return id;
}

/** Shapes of nested statements kept compiled, per engine; past it the cache starts again (shapes are per call site). */
const MAX_SHAPES = 4096;
const SQLITE_SHAPES = new Map<string, string>();
const POSTGRES_SHAPES = new Map<string, string>();

const SQLITE_TEXT = new WeakMap<readonly string[], string>();
const POSTGRES_TEXT = new WeakMap<readonly string[], string>();

function placeholders(strings: readonly string[], dialect: Dialect): string {
  let text = strings[0] ?? "";
  for (let i = 1; i < strings.length; i++) text += `${dialect === "sqlite" ? "?" : `$${i}`}${strings[i]}`;
  return text;
}

/** A value as the engine binds it: SQLite binds neither booleans nor undefined. */
function bound(value: unknown, dialect: Dialect): unknown {
  if (value === undefined) return null;
  if (dialect === "sqlite" && typeof value === "boolean") return value ? 1 : 0;
  return value;
}

/**
 * The catalog's connection as the stores see it, one per catalog (SqliteSql, PgSql). Guarantees:
 * - `write` runs the rule as one write transaction ordered with every other write to the catalog, across processes:
 *   SQLite's BEGIN IMMEDIATE behind the process's write gate; PostgreSQL's READ COMMITTED transaction that first takes
 *   the catalog's advisory write lock (decision 0220). All of it commits or none of it.
 * - `read` runs the rule in one snapshot (SQLite's deferred transaction, PostgreSQL's REPEATABLE READ READ ONLY).
 * - `hold` runs the rule as `write` does, and lets it wait (`outside`) for work outside the database in between,
 *   every other write of the catalog waiting meanwhile: for what must not interleave with a write, and only that.
 * - `select` runs one statement alone.
 * A rule may be run again from its start (PostgreSQL retries a transaction that failed transiently, before COMMIT), so
 * a rule is given as a function that makes it, and does nothing outside its statements but compute.
 */
export interface CatalogSql {
  readonly dialect: Dialect;
  write<T>(rule: () => Rule<T>): Promise<T>;
  hold<T>(rule: () => Rule<T>): Promise<T>;
  read<T>(rule: () => Rule<T>): Promise<T>;
  select<R>(statement: Statement): Promise<R[]>;
}
