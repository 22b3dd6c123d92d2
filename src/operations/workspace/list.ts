// list: what the workspace holds, most recently saved first, a page at a time; the first page counts namespaces and
// kinds, so a new session sees what is saved without knowing a name.
import { z } from "zod";
import { ARTIFACT_KINDS } from "../../workspace/catalog/catalog.js";
import { WORKSPACE_LIMITS } from "../../workspace/limits.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";

const { listResults, listNamespaces } = WORKSPACE_LIMITS;

const Listed = z.object({
  name: z.string(),
  version: z.number(),
  kind: z.enum(ARTIFACT_KINDS),
  media_type: z.string(),
  bytes: z.number(),
  created_at: z.string(),
  summary: z.string().nullable(),
  stale: z.boolean(),
  objective: z.string().optional().describe("a checkpoint's objective"),
});

export const list: OperationFactory = () =>
  defineOperation({
    name: "list",
    title: "List the workspace",
    summary: `Current artifacts, most recently saved first, up to ${listResults.max} a page (default ${listResults.default}) with \`next_cursor\`; filters \`namespace\` (any depth) and \`kind\`; the first page counts the total, namespaces (up to ${listNamespaces}) and kinds.`,
    description:
      "List saved artifacts, newest first, with namespace and kind counts on the first page. Pass next_cursor back as cursor for the next page.",
    input: z.strictObject({
      namespace: z.string().optional().describe("Only names under it (proj: proj/…)."),
      kind: z.enum(ARTIFACT_KINDS).optional().describe("Only this kind."),
      limit: z.number().int().optional().describe(`1 to ${listResults.max} (default ${listResults.default}).`),
      cursor: z.string().optional().describe("next_cursor of the previous page."),
    }),
    output: z.object({
      artifacts: z.array(Listed),
      next_cursor: z.string().nullable().describe("pass back as cursor for the next page; null on the last"),
      total: z.number().optional().describe("first page only: artifacts matching the filters"),
      namespaces: z
        .array(z.object({ namespace: z.string(), count: z.number() }))
        .optional()
        .describe(`first page only: namespaces one level down, most recent first (at most ${listNamespaces})`),
      more_namespaces: z.number().optional().describe("namespaces beyond those named"),
      kinds: z.partialRecord(z.enum(ARTIFACT_KINDS), z.number()).optional().describe("first page only: count by kind"),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: {
      path: "workspace.list",
      positional: ([namespace, options]) =>
        typeof namespace === "string" ? { ...(options as object | undefined), namespace } : (namespace ?? {}),
    },
    cli: {
      args: ["namespace"],
      human: (r) => {
        const lines: string[] = [];
        if (r.total !== undefined) {
          const kinds = Object.entries(r.kinds ?? {}).map(([kind, count]) => `${kind} ${count}`);
          const namespaces = (r.namespaces ?? []).map((n) => `${n.namespace}/ (${n.count})`);
          if (r.more_namespaces) namespaces.push(`… ${r.more_namespaces} more`);
          lines.push(`${r.total} artifact(s)${kinds.length > 0 ? `: ${kinds.join(", ")}` : ""}`);
          if (namespaces.length > 0) lines.push(`namespaces: ${namespaces.join(", ")}`);
        }
        for (const a of r.artifacts) {
          const about = a.objective ?? a.summary;
          lines.push(
            `${a.name} v${a.version} (${a.kind}, ${a.bytes} bytes, ${a.created_at})${a.stale ? " [stale]" : ""}${about ? `: ${about}` : ""}`,
          );
        }
        if (r.next_cursor !== null) lines.push(`[more: --cursor ${r.next_cursor}]`);
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => (await ctx.services.workspace()).list(args),
  });
