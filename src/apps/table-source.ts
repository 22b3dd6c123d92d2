// Where the table app's rows come from: the reply of `query` or `execute_code` the host hands it, and the `query`
// call that fetches any other page or order of that result through the host. Pure: tested without a browser.
import { pageSql, type ViewColumn, type ViewSort } from "../views/table-view.js";

/** A query reply as the tool sends it (operations/sql/query.ts). */
export interface QueryShape {
  columns: ViewColumn[];
  rows: Record<string, unknown>[];
  row_count: number;
  truncated?: boolean;
  saved?: { artifact_id?: string; name?: string; version?: number };
}

/** A result the app can show, and how to ask for another page of it (absent: only the rows it came with). */
export interface TableSource {
  reply: QueryShape;
  /** The `query` arguments of a page, or undefined when the result cannot be asked again. */
  page?: (page: { offset: number; limit: number; sort?: ViewSort | undefined }) => Record<string, unknown>;
  /** What the table is, in words, for its heading. */
  title: string;
}

export function isQueryShape(value: unknown): value is QueryShape {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Partial<QueryShape>;
  return (
    Array.isArray(v.columns) &&
    v.columns.every((c) => typeof c?.name === "string" && typeof c?.type === "string") &&
    Array.isArray(v.rows) &&
    typeof v.row_count === "number"
  );
}

/** The version a save made, paged by its id: exact, whatever is saved under the name later. */
function savedPages(id: string): TableSource["page"] {
  return (page) => ({ inputs: [id], sql: pageSql("SELECT * FROM input1", page), allow_historical: true });
}

/**
 * The table in a tool's reply, from the tool's name, its arguments and its result text; undefined when the reply
 * holds no table (an error, a spilled reply, an execute_code value of another shape).
 * - `query`: pages re-run its SQL (as a subquery) over the same inputs and parameters, or read the version `save_as`
 *   made by its id; never with `save_as` again.
 * - `execute_code` whose value is a query reply: pages read the version it saved; a reply saved nowhere has only the
 *   rows it came with.
 */
export function tableSource(
  tool: string | undefined,
  args: Record<string, unknown>,
  text: string | undefined,
): TableSource | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const fromCode = tool === "execute_code" || (isRecord(parsed) && parsed.ok === true && "value" in parsed);
  const reply = fromCode && isRecord(parsed) ? parsed.value : parsed;
  if (!isQueryShape(reply)) return undefined;
  const saved = reply.saved?.artifact_id;
  if (saved !== undefined) {
    return {
      reply,
      page: savedPages(saved),
      title: `${reply.saved?.name ?? "result"} v${reply.saved?.version ?? "?"}`,
    };
  }
  if (!fromCode && typeof args.sql === "string" && Array.isArray(args.inputs)) {
    const sql = args.sql;
    const base: Record<string, unknown> = { inputs: args.inputs };
    if (Array.isArray(args.parameters)) base.parameters = args.parameters;
    if (args.allow_historical === true) base.allow_historical = true;
    return { reply, page: (page) => ({ ...base, sql: pageSql(sql, page) }), title: "Query result" };
  }
  return { reply, title: fromCode ? "Snippet result" : "Query result" };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
