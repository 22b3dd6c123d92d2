// describe_tools: exactly how to call a few capabilities, as TypeScript declarations with a one-line example.
import { z } from "zod";
import { describeCapabilities } from "../../codemode/declarations.js";
import { CairnError, ErrorCode } from "../../errors.js";
import type { Capability } from "../../registry/capability.js";
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
    }),
    annotations: READ_ONLY,
    tool: { profiles: ["agent", "full"] },
    snippet: { path: "cairn.describe_tools" },
    handler: async (args, ctx) => {
      const { registry } = ctx.services;
      await ctx.services.ready();
      const found: Capability[] = [];
      const unknown: { name: string; did_you_mean: string[] }[] = [];
      for (const name of new Set(args.names)) {
        const capability = registry.get(name);
        if (capability) found.push(capability);
        else unknown.push({ name, did_you_mean: registry.suggest(name) });
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
      return unknown.length > 0 ? { tools, unknown } : { tools };
    },
  });
