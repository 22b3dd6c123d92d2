// provenance: who made a version and how, its dependencies (transitive, bounded), and why it is stale; read-only.
import { z } from "zod";
import { PROVENANCE_LIMITS, provenanceOf } from "../../workspace/provenance.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";
import { Ref } from "../shapes.js";
import { History, Producer } from "./shapes.js";

export const provenance: OperationFactory = () =>
  defineOperation({
    name: "provenance",
    title: "Explain where a version came from",
    summary: `Who made a version and by which operation (save, import, query save_as with its SQL digest, refresh, a task run id), its dependencies (transitive, at most ${PROVENANCE_LIMITS.dependencies}, ${PROVENANCE_LIMITS.depth} levels) with their producers, and why it is stale: which input moved, from which version to which, by whom.`,
    description:
      "Explain a version: produced_by (actor, operation, time, detail such as sql_sha256 or run_id), dependencies with their producers, and stale_because (each input that moved: from which version to which, by whom). Read-only. history says when old events were removed.",
    input: z.strictObject({ ref: Ref.describe("A name (its current version) or a ws_ id.") }),
    output: z.object({
      artifact_id: z.string(),
      name: z.string(),
      version: z.number(),
      current: z.boolean(),
      stale: z.boolean(),
      produced_by: Producer.nullable().describe("null when its event was removed or predates the event log"),
      dependencies: z.array(
        z.object({
          artifact_id: z.string(),
          name: z.string(),
          version: z.number(),
          depth: z.number().describe("1: a direct dependency"),
          current: z.boolean(),
          produced_by: Producer.nullable(),
        }),
      ),
      dependencies_omitted: z.number().describe("past the bounds, not listed"),
      stale_because: z.array(
        z.object({
          name: z.string(),
          artifact_id: z.string().describe("the version pinned"),
          version: z.number(),
          current_artifact_id: z.string().nullable(),
          current_version: z.number().nullable().describe("null: the name was deleted"),
          moved_by: Producer.nullable(),
          explanation: z.string(),
        }),
      ),
      history: History.nullable(),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["runtime", "full"] },
    snippet: { path: "workspace.provenance", positional: (args) => ({ ref: args[0] }) },
    cli: {
      args: ["ref"],
      human: (r) => {
        const by = (p: z.output<typeof Producer> | null) =>
          p === null ? "producer unknown" : `${p.operation} by ${p.actor} at ${p.at}`;
        const lines = [`${r.name} v${r.version} (${r.artifact_id}): ${by(r.produced_by)}${r.stale ? "; STALE" : ""}`];
        for (const d of r.dependencies)
          lines.push(`${"  ".repeat(d.depth)}${d.name} v${d.version}: ${by(d.produced_by)}`);
        if (r.dependencies_omitted > 0) lines.push(`  [${r.dependencies_omitted} more dependencies not listed]`);
        for (const s of r.stale_because) lines.push(`stale: ${s.explanation}`);
        if (r.history !== null) lines.push(r.history.note);
        return lines.join("\n");
      },
    },
    handler: async (args, ctx) => provenanceOf(await ctx.services.workspace(), args.ref),
  });
