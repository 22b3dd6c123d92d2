// describe: exact column names and SQL types of workspace tables, paged for wide ones.
import { z } from "zod";
import { SQL_LIMITS } from "../../workspace/limits.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { QueryColumn } from "../shapes.js";
import { SqlInputs } from "./inputs.js";

const { describeColumns } = SQL_LIMITS;

export const describe: OperationFactory = () =>
  defineOperation({
    name: "describe",
    title: "Columns of workspace tables",
    summary: "Exact column names and SQL types, no rows, paged for wide tables.",
    description:
      "Exact column names and SQL types of CSV, Parquet or JSON artifacts, no rows; paged for wide tables (next_offset is null at the end).",
    input: z.strictObject({
      inputs: SqlInputs,
      offset: z.number().int().min(0).optional().describe("First column: the previous next_offset."),
      limit: z
        .number()
        .int()
        .min(1)
        .max(describeColumns.max)
        .optional()
        .describe(`Columns per input (default ${describeColumns.default}).`),
    }),
    output: z.object({
      inputs: z.array(
        z.object({
          input: z.string().describe("input1..inputN"),
          ref: z.string(),
          artifact_id: z.string(),
          name: z.string(),
          version: z.number(),
          columns: z.array(QueryColumn),
          column_count: z.number(),
          next_offset: z.number().nullable(),
        }),
      ),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.describe" },
    cli: {
      args: ["inputs"],
      human: (r) =>
        r.inputs
          .map(
            (d) => `${d.input} = ${d.name} v${d.version}\n${d.columns.map((c) => `  ${c.name} ${c.type}`).join("\n")}`,
          )
          .join("\n"),
    },
    handler: async (args, ctx) => (await ctx.services.sql()).describe(args, ctx.signal),
  });
