// The SQL tools of SPEC (query, describe, refresh) over workspace artifacts: DuckDB runs locally, only a bounded
// preview and a reference to a saved result come back.
import { z } from "zod";
import type { WorkspaceConfig } from "../../config/schema.js";
import type { WorkspaceSql } from "../../workspace/sql.js";
import { defineTool, jsonReply, type ToolDefinition } from "../tool.js";

const Refs = z
  .array(z.string().min(1))
  .min(1)
  .max(8)
  .describe("1 to 8 CSV, Parquet or JSON artifacts (names or ws_ ids); the SQL sees them as input1..inputN.");

export const QueryInputSchema = z.strictObject({
  inputs: Refs,
  sql: z
    .string()
    .min(1)
    .max(6000)
    .describe("One read-only SELECT (or WITH ... SELECT) over input1..inputN; ? binds parameters."),
  parameters: z.array(z.unknown()).max(1000).optional().describe("Values bound to ? in order."),
  save_as: z.string().optional().describe("Save the FULL result as a Parquet version of this name (pins the inputs)."),
  expected_version: z.number().int().optional().describe("With save_as: the name's current version, once it exists."),
  allow_historical: z.boolean().optional().describe("Query inputs that are no longer current (refused by default)."),
});

export const DescribeInputSchema = z.strictObject({
  inputs: Refs,
  offset: z.number().int().min(0).optional().describe("First column to return (the previous next_offset)."),
  limit: z.number().int().min(1).max(1000).optional().describe("Columns per input (default 200)."),
});

export const RefreshInputSchema = z.strictObject({
  ref: z.string().min(1).describe("A saved query result (name or ws_ id)."),
  expected_version: z.number().int().optional().describe("The name's current version (defaults to it)."),
});

export function queryTools(sql: () => Promise<WorkspaceSql>, config: WorkspaceConfig): ToolDefinition[] {
  return [
    defineTool({
      name: "query",
      title: "SQL over workspace tables",
      description:
        `Run one read-only SQL statement (DuckDB dialect) over 1 to 8 CSV, Parquet or JSON artifacts, visible as input1..inputN. The SQL reads its inputs and nothing else (no files, ATTACH, COPY, SET, extensions). ` +
        `Returns {columns:[{name,type}], rows, row_count, truncated, integer_string_columns?, saved?}: at most ${config.max_preview_rows} rows and ${config.max_preview_bytes} bytes of preview; row_count counts the full result; integers beyond +-(2^53-1) and decimals come as exact strings. ` +
        `save_as stores the full result as Parquet with its SQL, parameters and input ids (it turns stale when an input moves on; refresh re-runs it). Inputs that are no longer current are refused (STALE_INPUT) unless allow_historical. Deadline ${config.query_timeout_ms} ms, memory ${config.query_memory}.`,
      inputSchema: QueryInputSchema,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      handler: async (args, ctx) => jsonReply(await (await sql()).query(args, ctx.signal)),
    }),
    defineTool({
      name: "describe",
      title: "Columns of workspace tables",
      description:
        "Exact column names and SQL types of 1 to 8 CSV, Parquet or JSON artifacts, no rows; paged for wide tables (offset, limit; next_offset is null at the end).",
      inputSchema: DescribeInputSchema,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      handler: async (args, ctx) => jsonReply(await (await sql()).describe(args, ctx.signal)),
    }),
    defineTool({
      name: "refresh",
      title: "Refresh a saved query result",
      description:
        "Re-run a result saved with query save_as on the current versions of its inputs, as a new version of its name. A direct input that is itself stale is refused: refresh the chain from its roots.",
      inputSchema: RefreshInputSchema,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      handler: async (args, ctx) => jsonReply(await (await sql()).refresh(args, ctx.signal)),
    }),
  ];
}
