// describe_tools: exactly how to call a few capabilities, as TypeScript declarations with a one-line example. Waits
// for the servers it is asked about that are still starting; a tool of a server that is down is reported as such.
import { z } from "zod";
import { describeCapabilities } from "../../codemode/declarations.js";
import { syncSavedSnippets } from "../../codemode/saved-tools.js";
import { CairnError, ErrorCode } from "../../errors.js";
import { type Capability, splitCanonicalName } from "../../registry/capability.js";
import { defineOperation, type OperationFactory, READ_ONLY } from "../operation.js";

const MAX_NAMES = 20;

export const describeTools: OperationFactory = () =>
  defineOperation({
    name: "describe_tools",
    title: "Describe capabilities as TypeScript",
    summary: `TypeScript declarations (input type, output type when the server gives one, doc comments) and a one-line call example per capability; "did you mean" for unknown names. At most ${MAX_NAMES}.`,
    description: `TypeScript declarations (input and output types) and a call example for up to ${MAX_NAMES} capabilities named as search_tools gives them; unknown names get "did you mean".`,
    input: z.strictObject({
      names: z.array(z.string().min(1).max(300)).min(1).max(MAX_NAMES).describe("e.g. ['github.list_issues']."),
    }),
    output: z.object({
      tools: z.array(z.object({ name: z.string(), declaration: z.string(), example: z.string() })),
      unknown: z.array(z.object({ name: z.string(), did_you_mean: z.array(z.string()) })).optional(),
      unavailable: z
        .array(z.object({ name: z.string(), server: z.string(), state: z.string(), cause: z.string().optional() }))
        .optional()
        .describe("names on servers that are down: their tools are not known"),
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["agent", "runtime", "full"] },
    snippet: { path: "cairn.describe_tools" },
    handler: async (args, ctx) => {
      const { registry } = ctx.services;
      const names = [...new Set(args.names)];
      // Saved snippets (saved:NAME) are described from their current declaration (decision 0242).
      await syncSavedSnippets(registry, ctx.services.workspace);
      const configured = new Set(ctx.services.upstreamStatus().map((s) => s.server));
      const serverOf = (name: string) => registry.get(name)?.server ?? splitCanonicalName(name)?.server;
      const servers = [...new Set(names.map(serverOf))].filter(
        (s): s is string => s !== undefined && configured.has(s),
      );
      if (servers.length > 0) await ctx.services.ready(servers);
      const states = new Map(ctx.services.upstreamStatus().map((s) => [s.server, s]));
      const found: Capability[] = [];
      const unknown: { name: string; did_you_mean: string[] }[] = [];
      const unavailable: { name: string; server: string; state: string; cause?: string }[] = [];
      for (const name of names) {
        const capability = registry.get(name);
        const state = states.get(serverOf(name) ?? "");
        if (capability) found.push(capability);
        else if (state !== undefined && state.status !== "ready") {
          const { server, status, cause } = state;
          unavailable.push(
            cause === undefined ? { name, server, state: status } : { name, server, state: status, cause },
          );
        } else unknown.push({ name, did_you_mean: registry.suggest(name) });
      }
      if (found.length === 0 && unavailable.length > 0) {
        const [first] = unavailable as [(typeof unavailable)[number]];
        throw new CairnError(
          ErrorCode.UPSTREAM_UNAVAILABLE,
          `upstream server "${first.server}" is ${first.state}${first.cause === undefined ? "" : `: ${first.cause}`}, ` +
            `so the tools of ${first.server} are not known. Cairn retries it on the next call; check [servers.${first.server}] in cairn.toml if it keeps failing`,
          { data: { unavailable, ...(unknown.length > 0 ? { unknown } : {}) } },
        );
      }
      if (found.length === 0) {
        const hints = unknown.map(
          (u) => `${u.name}${u.did_you_mean.length > 0 ? ` (did you mean ${u.did_you_mean.join(", ")}?)` : ""}`,
        );
        throw new CairnError(
          ErrorCode.TOOL_NOT_FOUND,
          `no capability named ${hints.join("; ")}: search_tools finds them by keyword`,
          { data: { unknown } },
        );
      }
      const tools = await describeCapabilities(found);
      return {
        tools,
        ...(unknown.length > 0 ? { unknown } : {}),
        ...(unavailable.length > 0 ? { unavailable } : {}),
      };
    },
  });
