// diff: exact line edits from a version the caller holds whole to the current version of a name, or requires_read;
// for two table versions, rows added, removed and changed (workspace/table-diff.ts).
// Also the schema pieces sync shares: base, max_bytes, a change, the reasons, and how the command line prints edits.
import { z } from "zod";
import type { Config } from "../../config/schema.js";
import { groupDigits } from "../../digits.js";
import { CairnError, ErrorCode } from "../../errors.js";
import { READ_REASONS, SYNC_LIMITS } from "../../workspace/retrieval/sync.js";
import { diffTableVersions } from "../../workspace/table-diff.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Metadata, RowChanges } from "../shapes.js";
import { describeChangedRows, describeRowChanges, describeVersion } from "../workspace/human.js";

const { maxBytes, sourceBytes } = SYNC_LIMITS;

export const Base = z
  .union([z.string(), z.number().int()])
  .describe("ws_ id or version number (text: one you hold whole).");

/** The reply stays below the spill threshold by default, so a budgeted reply is never cut. */
export function defaultMaxBytes(config: Config): number {
  return Math.min(maxBytes.default, config.output.view_chars);
}

export const MaxBytes = (config: Config) =>
  z
    .number()
    .int()
    .optional()
    .describe(`Reply bytes, ${maxBytes.min}-${maxBytes.max} (default ${defaultMaxBytes(config)}).`);

export const Change = z
  .tuple([z.number(), z.number(), z.string()])
  .describe("[at, delete, insert]: from base line at (0-based), delete lines become insert (lines with endings)");

export const Reason = z.enum(READ_REASONS);

/** The current version's metadata with the changes (line edits, or rows for tables), or requires_read and why. */
const DiffReply = z.union([
  Metadata.extend({ changes: z.array(Change).describe("apply in reverse order; [] when unchanged") }),
  Metadata.extend({ requires_read: z.literal(true), reason: Reason }),
  Metadata.extend({
    base: z.object({ artifact_id: z.string(), name: z.string(), version: z.number() }),
    row_changes: RowChanges.extend({ offset: z.number() }),
  }),
]);

export const SOURCE_LIMIT = `UTF-8 text up to ${sourceBytes / (1024 * 1024)} MiB`;

export const diff: OperationFactory = (config) =>
  defineOperation({
    name: "diff",
    title: "Changes since base",
    summary: `Exact line edits (\`[at, delete, insert]\`, applied in reverse order) from a version the caller holds whole to the current one, or \`requires_read\` with the reason; never cut; ${SOURCE_LIMIT}, the reply within \`max_bytes\` (at most ${groupDigits(maxBytes.max)}). Tables (CSV, Parquet): rows added, removed and changed, by \`key\` or whole rows.`,
    description:
      "Changes from base to ref's current version. Text: line edits [at, delete, insert]; split base after each \\n, apply them in reverse order as lines.splice(...change), join. requires_read (reason): read artifact_id whole. Tables: row_changes.",
    input: z.strictObject({
      ref: z.string().describe("Name or ws_ id (its name's current version)."),
      base: Base,
      max_bytes: MaxBytes(config),
      key: z.array(z.string()).optional().describe("Tables: row ids."),
      offset: z.number().int().optional().describe("Tables: skip."),
    }),
    output: DiffReply,
    annotations: READ_ONLY,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "workspace.diff" },
    cli: {
      args: ["ref"],
      human: (r) =>
        "requires_read" in r
          ? `${describeVersion(r)}: read it whole (${r.reason})`
          : "row_changes" in r
            ? [
                `${describeVersion(r)}: ${describeRowChanges(r.row_changes)} since v${r.base.version}`,
                ...describeChangedRows(r.row_changes.rows),
              ].join("\n")
            : `${describeVersion(r)}: ${describeChanges(r.changes)}`,
    },
    handler: async (args, ctx) => {
      const { key, offset, ...text } = args;
      const max_bytes = args.max_bytes ?? defaultMaxBytes(config);
      const workspace = await ctx.services.workspace();
      const table = await diffTableVersions(workspace, () => ctx.services.sql(), { ...args, max_bytes }, ctx.signal);
      if (table !== undefined) return table;
      if (key !== undefined || offset !== undefined) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          "key and offset apply to tables (CSV or Parquet versions of both ref and base): leave them out for text",
        );
      }
      return workspace.diff({ ...text, max_bytes });
    },
  });

/** `unchanged`, or `N changes` and each as `@@ line L: -D +I` with the inserted lines marked `+`. */
export function describeChanges(changes: readonly z.infer<typeof Change>[]): string {
  if (changes.length === 0) return "unchanged";
  const hunks = changes.map((c) => {
    const [at, deleted, insert] = c;
    const inserted = insert === "" ? [] : insert.replace(/\n$/, "").split("\n");
    const lines = inserted.map((line) => `+${line}`).join("\n");
    return `@@ line ${at + 1}: -${deleted} +${inserted.length}${lines === "" ? "" : `\n${lines}`}`;
  });
  return `${changes.length} change${changes.length === 1 ? "" : "s"}\n${hunks.join("\n")}`;
}
