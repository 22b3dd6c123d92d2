// The workspace inside snippets: workspace.save / read / find / inspect / resume, on the same code paths as the
// tools (same validation, same replies). Also reachable as call_tool("workspace.save", {...}).
import type { z } from "zod";
import { CairnError, ErrorCode } from "../errors.js";
import type { SqlDescribeInput, SqlQueryInput, WorkspaceSql } from "../workspace/sql.js";
import { FindInputSchema, InspectInputSchema, ResumeInputSchema, SaveInputSchema } from "../workspace/tool-schemas.js";
import type { Workspace } from "../workspace/workspace.js";
import { type Bindings, bytesValue, type RunContext } from "./bindings.js";
import { saveToWorkspace } from "./promote.js";

function parse<S extends z.ZodType>(schema: S, value: unknown, fn: string): z.infer<S> {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`);
  throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${fn}(args): ${problems.join("; ")}`, { name: "WorkspaceError" });
}

/** The schemas of the SQL tools, passed in so that codemode does not depend on the server. */
export interface SqlSchemas {
  query: z.ZodType<SqlQueryInput>;
  describe: z.ZodType<SqlDescribeInput>;
}

export function defineWorkspaceBindings(
  bindings: Bindings,
  workspace: () => Promise<Workspace>,
  sql?: { service: () => Promise<WorkspaceSql>; schemas: SqlSchemas },
): void {
  const save = async (args: unknown, ctx: RunContext) => {
    // Snippets may save bytes too (a Uint8Array content); the tool schema only knows text.
    const record = (args ?? {}) as Record<string, unknown>;
    if (record.content instanceof Uint8Array) {
      const { content, ...rest } = record;
      const checked = parse(SaveInputSchema.strict(), rest, "workspace.save");
      if (checked.from !== undefined || checked.checkpoint !== undefined) {
        throw new CairnError(ErrorCode.INVALID_ARGUMENT, "workspace.save takes one of content, checkpoint or from", {
          name: "WorkspaceError",
        });
      }
      return (await workspace()).save({ ...checked, content } as Parameters<Workspace["save"]>[0]);
    }
    return saveToWorkspace(await workspace(), parse(SaveInputSchema.strict(), args, "workspace.save"), ctx.session);
  };
  const find = async (args: unknown) =>
    (await workspace()).find(parse(FindInputSchema.strict(), args, "workspace.find"));
  const inspect = async (args: unknown) =>
    (await workspace()).inspect(parse(InspectInputSchema.strict(), args, "workspace.inspect"));
  const resume = async (args: unknown) =>
    (await workspace()).resume(parse(ResumeInputSchema.strict(), args, "workspace.resume"));
  const read = async (ref: unknown, options: unknown) => {
    if (typeof ref !== "string") {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, "workspace.read(ref, {as?}): ref is a name or ws_ id", {
        name: "WorkspaceError",
      });
    }
    const as = (options as { as?: unknown } | undefined)?.as ?? "text";
    if (as !== "text" && as !== "json" && as !== "bytes") {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, 'workspace.read: as is "text", "json" or "bytes"', {
        name: "WorkspaceError",
      });
    }
    const ws = await workspace();
    if (as === "bytes") return bytesValue(await ws.read(ref, { as: "bytes" }));
    if (as === "json") return ws.read(ref, { as: "json" });
    return ws.read(ref, { as: "text" });
  };

  if (sql) {
    const query = async (args: unknown, ctx: RunContext) =>
      (await sql.service()).query(parse(sql.schemas.query, args, "workspace.query"), ctx.signal);
    const describe = async (args: unknown, ctx: RunContext) =>
      (await sql.service()).describe(parse(sql.schemas.describe, args, "workspace.describe"), ctx.signal);
    bindings
      .defineFunction("workspace.query", ([args], ctx) => query(args, ctx))
      .defineFunction("workspace.describe", ([args], ctx) => describe(args, ctx))
      .defineCapability("workspace.query", (args, ctx) => query(args, ctx))
      .defineCapability("workspace.describe", (args, ctx) => describe(args, ctx));
  }
  bindings
    .defineFunction("workspace.save", ([args], ctx) => save(args, ctx))
    .defineFunction("workspace.find", ([args]) => find(args))
    .defineFunction("workspace.inspect", ([args]) => inspect(args))
    .defineFunction("workspace.resume", ([args]) => resume(args))
    .defineFunction("workspace.read", ([ref, options]) => read(ref, options))
    .defineCapability("workspace.save", (args, ctx) => save(args, ctx))
    .defineCapability("workspace.find", (args) => find(args))
    .defineCapability("workspace.inspect", (args) => inspect(args))
    .defineCapability("workspace.resume", (args) => resume(args))
    .defineCapability("workspace.read", (args) => read(args.ref, args));
}
