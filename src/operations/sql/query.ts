// query: one read-only DuckDB SELECT over workspace tables; only a bounded preview and a saved-result reference
// come back. In snippets, also every row (rows: "all") or a res_ handle of them (into: "result"): see rows.ts.
import { z } from "zod";
import { SQL_LIMITS } from "../../workspace/limits.js";
import { defineOperation, type OperationFactory, WRITES } from "../operation.js";
import { writeOptions } from "../provenance/actor.js";
import { Metadata, QueryColumn } from "../shapes.js";
import { describeVersion } from "../workspace/human.js";
import { SqlInputs } from "./inputs.js";
import { queryWholeRows, type WholeRowsArgs, wholeRowsFields } from "./rows.js";

const QueryReply = z.object({
  columns: z.array(QueryColumn),
  rows: z.array(z.record(z.string(), z.unknown())),
  row_count: z.number().describe("rows of the full result"),
  truncated: z.boolean().describe("rows holds fewer than row_count"),
  integer_string_columns: z.array(z.string()).optional().describe("columns whose big integers come as strings"),
  saved: Metadata.optional().describe("the version save_as made"),
  result: z.string().optional().describe('with into: "result": the res_ handle of every row'),
});

export const query: OperationFactory = (config) => {
  const { workspace } = config;
  const input = z.strictObject({
    inputs: SqlInputs,
    sql: z
      .string()
      .min(1)
      .max(SQL_LIMITS.sqlChars)
      .describe("SELECT or WITH ... SELECT over input1..inputN; ? binds parameters."),
    parameters: z.array(z.unknown()).max(SQL_LIMITS.parameters).optional().describe("Values bound to ?, in order."),
    save_as: z.string().optional().describe("Save the full result as a version of this name."),
    expected_version: z.number().int().optional().describe("With save_as: the name's current version."),
    allow_historical: z.boolean().optional().describe("Allow superseded inputs."),
    preview_rows: z
      .number()
      .int()
      .min(0)
      .max(workspace.max_preview_rows)
      .optional()
      .describe("0: no preview (a save_as only kept)."),
  });
  return defineOperation({
    name: "query",
    title: "SQL over workspace tables",
    summary: `One read-only DuckDB \`SELECT\` over CSV/Parquet/JSON artifacts named \`input1\`…\`inputN\`; the SQL can read nothing else. At most ${workspace.max_preview_rows} rows / ${workspace.max_preview_bytes} bytes of preview (\`preview_rows\` lowers it; 0 for none, as for a \`save_as\` only kept), \`row_count\` of the full result, exact big integers and decimals as strings; ${workspace.query_timeout_ms / 1000} s deadline and ${workspace.query_memory} of memory for the whole query, enforced by ending the DuckDB child process that runs it. \`save_as\` keeps the full result as Parquet with its SQL and pinned inputs. Stale inputs are refused unless \`allow_historical\`.`,
    description:
      `One read-only DuckDB SELECT over workspace tables (input1..inputN), reading nothing else. ` +
      `Returns {columns, rows, row_count, truncated, saved?}: a preview of at most ${workspace.max_preview_rows} rows / ${workspace.max_preview_bytes} bytes, row_count of the full result; big integers and decimals as strings. ` +
      `save_as keeps the full result as Parquet, stale when an input moves on (refresh re-runs it). Superseded inputs fail (STALE_INPUT) unless allow_historical. ${workspace.query_timeout_ms / 1000} s, ${workspace.query_memory}.`,
    input,
    // Snippets may take every row; the tool's schema (and what tools/list costs) stays the preview's.
    snippetInput: input.extend(wholeRowsFields(config)),
    output: QueryReply,
    annotations: WRITES,
    // A preview is a read; only save_as writes.
    role: "reader",
    callRole: (args) => (args.save_as === undefined ? "reader" : "writer"),
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.query" },
    cli: {
      args: ["sql"],
      flags: { inputs: "input", parameters: "param" },
      human: (r) => {
        const header = r.columns.map((c) => c.name);
        const lines = [header.join("\t"), ...r.rows.map((row) => header.map((h) => formatCell(row[h])).join("\t"))];
        lines.push(
          `(${r.row_count} row${r.row_count === 1 ? "" : "s"}${r.truncated ? `, ${r.rows.length} shown` : ""})`,
        );
        if (r.saved) lines.push(`saved ${describeVersion(r.saved)}`);
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => {
      const sql = await ctx.services.sql();
      const whole = await queryWholeRows(sql, args as typeof args & WholeRowsArgs, ctx, config);
      if (whole === undefined) return sql.query(args, ctx.signal, writeOptions(ctx));
      // Every row passes to the run as the JSON text the engine wrote: a QueryReply the host never parses.
      return whole as z.output<typeof QueryReply>;
    },
  });
};

function formatCell(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

export { QueryReply };
