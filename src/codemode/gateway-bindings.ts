// Upstream tools and allow-listed programs inside snippets: `server.tool(args)` for every tool whose server and tool
// names are safe identifiers, `call_tool("server.any-name", args)` for all of them, `cli.NAME(...args)` and
// `cli_run(NAME, args)`. Binary results land in the run's artifact store; long program output is spilled.
import { CairnError, ErrorCode } from "../errors.js";
import type { Capability } from "../registry/capability.js";
import { isSafeIdentifier } from "../registry/identifiers.js";
import type { Bindings, RunContext, UpstreamProgress } from "./bindings.js";

/** The calls the gateway offers (an interface, so codemode does not depend on how upstreams are reached). */
export interface GatewayPort {
  call(
    name: string,
    args: Record<string, unknown>,
    options: {
      signal?: AbortSignal;
      /** Asks the upstream for progress on this call and hears it. */
      onProgress?: (progress: UpstreamProgress) => void;
      saveBinary(bytes: Buffer, mediaType: string, filename?: string): Promise<{ handle: string }>;
    },
  ): Promise<unknown>;
}

export interface CliPort {
  programs(): { name: string }[];
  run(
    program: string,
    args: string[],
    options: { signal?: AbortSignal },
  ): Promise<{ exit_code: number; stdout: string; stderr: string }>;
}

/** The snippet path of an upstream capability, or undefined when its names are not identifiers. */
function snippetPath(capability: Capability): string | undefined {
  if (capability.server === undefined || capability.tool === undefined) return undefined;
  if (!isSafeIdentifier(capability.server) || !isSafeIdentifier(capability.tool)) return undefined;
  return `${capability.server}.${capability.tool}`;
}

export function defineGatewayBindings(
  bindings: Bindings,
  options: { gateway: GatewayPort; capabilities: () => Capability[]; ready: () => Promise<void> },
): void {
  const callUpstream = async (name: string, args: unknown, ctx: RunContext) => {
    if (args !== undefined && args !== null && (typeof args !== "object" || Array.isArray(args))) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${name}(args): args must be an object`);
    }
    await options.ready();
    const listener = ctx.upstreamProgress;
    return options.gateway.call(name, (args ?? {}) as Record<string, unknown>, {
      signal: ctx.signal,
      ...(listener ? { onProgress: (progress: UpstreamProgress) => listener(name, progress) } : {}),
      saveBinary: async (bytes, mediaType, filename) => {
        const info = await ctx.session.artifacts.save(bytes, { media_type: mediaType, filename });
        ctx.savedArtifacts.push(info);
        return { handle: info.handle };
      },
    });
  };
  bindings.addProvider({
    paths: () => options.capabilities().flatMap((c) => snippetPath(c) ?? []),
    call: (path, args, ctx) => {
      const capability = options.capabilities().find((c) => snippetPath(c) === path);
      return capability ? callUpstream(capability.name, args[0], ctx) : undefined;
    },
  });
  bindings.setFallback((name, args, ctx) => callUpstream(name, args, ctx));
}

export function defineCliBindings(bindings: Bindings, cli: CliPort, enabled: boolean): void {
  const run = async (program: unknown, args: unknown, ctx: RunContext) => {
    if (typeof program !== "string") {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, "cli_run(name, args): name is a program name such as git");
    }
    if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `cli_run("${program}", args): args must be an array of strings`);
    }
    const result = await cli.run(program, args as string[], { signal: ctx.signal });
    // Output spills like any result: the snippet gets the view and the handle of the whole text.
    const out = await ctx.session.spillDetailed(result.stdout);
    const err = await ctx.session.spillDetailed(result.stderr);
    for (const saved of [out.saved, err.saved]) if (saved) ctx.savedArtifacts.push(saved);
    return { exit_code: result.exit_code, stdout: out.text, stderr: err.text };
  };
  bindings.defineFunction("cli_run", ([program, args], ctx) => run(program, args ?? [], ctx));
  if (!enabled) return;
  for (const { name } of cli.programs()) {
    if (isSafeIdentifier(name)) bindings.defineFunction(`cli.${name}`, (args, ctx) => run(name, args, ctx));
    // The canonical name search_tools and describe_tools give: call_tool("cli.git", {args: ["status"]}).
    bindings.defineCapability(`cli.${name}`, (args, ctx) => run(name, args.args ?? [], ctx));
  }
}
