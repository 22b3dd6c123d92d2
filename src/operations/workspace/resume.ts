// resume: open a checkpoint (by name, id or namespace) with a preview of every artifact it pins: a table's first rows
// and row count through the query engine (started only when a table is pinned), text's first bytes.
import { z } from "zod";
import { Omitted } from "../budget.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Checkpoint, Excerpt, Metadata } from "../shapes.js";
import { describeVersion } from "./human.js";

const Resumed = z.object({
  checkpoint: Checkpoint.extend({
    artifact_id: z.string(),
    name: z.string(),
    version: z.number(),
    created_at: z.string(),
    summary: z.string().nullable(),
    dependencies: z.array(z.string()),
    stale: z.boolean(),
    stale_inputs: Metadata.shape.stale_inputs,
  }),
  artifacts: z.array(
    Metadata.extend(Excerpt.partial().shape).extend({
      summary: z.string().nullable(),
      table: z
        .object({
          row_count: z.number(),
          columns: z.array(z.object({ name: z.string(), type: z.string() })),
          rows: z.array(z.record(z.string(), z.unknown())),
          integer_string_columns: z.array(z.string()).optional(),
        })
        .optional()
        .describe("a CSV, Parquet or JSON pin: its first rows and row count"),
    }),
  ),
  note: z.string().optional().describe("how the checkpoint was chosen when the text did not name it"),
  omitted: Omitted.optional().describe("table rows, then previews (from the last), then artifacts left out to fit"),
});

const Candidates = z.object({
  candidates: z.array(
    z.object({
      artifact_id: z.string(),
      name: z.string(),
      version: z.number(),
      created_at: z.string(),
      summary: z.string().nullable(),
      objective: z.string().nullable(),
    }),
  ),
  message: z.string(),
  omitted: Omitted.optional(),
});

export const resume: OperationFactory = () =>
  defineOperation({
    name: "resume",
    title: "Resume a checkpoint",
    summary:
      "A checkpoint by name or id, else the one under a namespace or the only search match, else the candidates; no text opens the most recent; with a preview of everything it pins (a table: its first rows and row count).",
    description:
      "Open a checkpoint (no text: the latest) with its objective, verified, next_step, notes and a preview of every artifact it pins (a table: first rows and row count); a namespace or words open the only match, else list candidates.",
    input: z.strictObject({
      text: z.string().optional().describe("A checkpoint name or id, a namespace or words."),
    }),
    output: z.union([Resumed, Candidates]),
    annotations: READ_ONLY,
    maxTokens: {},
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: {
      path: "workspace.resume",
      // workspace.resume() and workspace.resume("words") too.
      positional: ([text, options]) =>
        typeof text === "string" ? { ...(options as object | undefined), text } : (text ?? {}),
    },
    cli: {
      args: ["text"],
      human: (r) => {
        if ("candidates" in r)
          return `${r.message}\n${r.candidates.map((c) => `  ${c.name} v${c.version}: ${c.objective ?? ""}`).join("\n")}`;
        const cp = r.checkpoint;
        const lines = [
          ...(r.note === undefined ? [] : [r.note]),
          `${cp.name} v${cp.version}`,
          `objective: ${cp.objective}`,
        ];
        if (cp.verified) lines.push(`verified: ${cp.verified}`);
        if (cp.next_step) lines.push(`next step: ${cp.next_step}`);
        if (cp.notes) lines.push(`notes: ${cp.notes}`);
        for (const a of r.artifacts) {
          lines.push(`pins ${describeVersion(a)}`);
          if (a.table !== undefined) lines.push(...tableLines(a.table));
        }
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => {
      const sql = await ctx.services.sql();
      return (await ctx.services.workspace()).resume(args, ctx.budget, (ref, rows) => sql.peek(ref, rows, ctx.signal));
    },
  });

/** A table preview as the command line prints it: the count, the columns, one line of values per row. */
function tableLines(table: { row_count: number; columns: { name: string }[]; rows: Record<string, unknown>[] }) {
  const shown = table.rows.length < table.row_count ? `first ${table.rows.length} of ` : "";
  return [
    `  ${shown}${table.row_count} rows: ${table.columns.map((c) => c.name).join(", ")}`,
    ...table.rows.map((row) => `  ${table.columns.map((c) => JSON.stringify(row[c.name] ?? null)).join(", ")}`),
  ];
}
