// Upstream tools and allow-listed programs inside snippets: one namespace per configured server holding every tool
// (`everything["get-sum"](args)`, its alias `everything.get_sum`, `call_tool("everything.get-sum", args)`), the `cli`
// namespace (`cli.NAME(...args)`, `cli_run(NAME, args)`). A member a namespace lacks is answered by the host with the
// error that says what exists. Binary results land in the run's artifact store; long program output is spilled.
import { createHash } from "node:crypto";
import { CairnError, ErrorCode } from "../errors.js";
import type { Capability } from "../registry/capability.js";
import type { AskPerson, Bindings, RunContext, RunTrace, UpstreamCallRecord, UpstreamProgress } from "./bindings.js";

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
      /** How a call the server's policy marks may be approved (a person asked, the deadline held meanwhile). */
      approval?: {
        ask?: AskPerson | undefined;
        holdDeadline?: (() => () => void) | undefined;
        actor?: { name: string; role: string } | undefined;
      };
      /** The run's trace: the call is sent as a child span of it. */
      trace?: RunTrace | undefined;
    },
  ): Promise<unknown>;
}

export interface CliPort {
  programs(): { name: string }[];
  run(
    program: string,
    args: string[],
    options: { signal?: AbortSignal },
  ): Promise<{ exit_code: number; stdout: string; stderr: string; sandbox?: string }>;
}

export interface GatewayBindingsOptions {
  gateway: GatewayPort;
  /** The configured servers: each is a namespace, even while it starts or is down. */
  servers: () => string[];
  /** The upstream capabilities known now. */
  capabilities: () => Capability[];
  /** Resolves when none of `servers` is still starting (bounded by each one's startup_timeout_ms). */
  settled: (servers: string[]) => Promise<void>;
}

/** What a run needs from the upstream side before it starts. */
export interface GatewayRunPreparation {
  /**
   * Waits for the servers the snippet's code names that are still starting, so that their namespaces list their
   * tools; a server the code never names is never waited for.
   */
  prepare(code: string): Promise<void>;
}

export function defineGatewayBindings(bindings: Bindings, options: GatewayBindingsOptions): GatewayRunPreparation {
  const callUpstream = async (name: string, args: unknown, ctx: RunContext) => {
    refuseReader(ctx, `${name}(...)`, "upstream tools");
    if (args !== undefined && args !== null && (typeof args !== "object" || Array.isArray(args))) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${name}(args): args must be an object`);
    }
    // The gateway waits for a server still starting, and answers for one that is down.
    const listener = ctx.upstreamProgress;
    const call = options.gateway.call(name, (args ?? {}) as Record<string, unknown>, {
      signal: ctx.signal,
      ...(listener ? { onProgress: (progress: UpstreamProgress) => listener(name, progress) } : {}),
      saveBinary: async (bytes, mediaType, filename) => {
        const info = await ctx.session.artifacts.save(bytes, { media_type: mediaType, filename });
        ctx.savedArtifacts.push(info);
        return { handle: info.handle };
      },
      approval: { ask: ctx.askPerson, holdDeadline: ctx.holdDeadline, actor: ctx.session.actor },
      ...(ctx.trace === undefined ? {} : { trace: ctx.trace }),
    });
    return ctx.upstreamCalls === undefined ? call : recorded(call, name, args, ctx.upstreamCalls);
  };
  bindings.addProvider({
    namespaces: options.servers,
    paths: () => {
      const servers = new Set(options.servers());
      return options
        .capabilities()
        .flatMap((c) =>
          c.server !== undefined && c.tool !== undefined && servers.has(c.server) ? [`${c.server}.${c.tool}`] : [],
        );
    },
    // `server.member` is a canonical name or an alias; the gateway resolves both and answers for anything else.
    call: (path, args, ctx) => callUpstream(path, args[0], ctx),
  });
  bindings.setFallback((name, args, ctx) => callUpstream(name, args, ctx));
  return {
    async prepare(code) {
      const named = options.servers().filter((server) => namesServer(code, server));
      if (named.length > 0) await options.settled(named);
    },
  };
}

/**
 * Readers may only read, and Cairn cannot vouch that an upstream tool or a program does (a readOnlyHint is the
 * server's claim, not a guarantee): a reader's snippet calls neither (decision 0211).
 */
function refuseReader(ctx: RunContext, call: string, what: string): void {
  const actor = ctx.session.actor;
  if (actor?.role !== "reader") return;
  throw new CairnError(
    ErrorCode.NOT_ALLOWED,
    `${call} needs the writer role and identity ${actor.name} is a reader: readers call Cairn's read operations only, not ${what}; ask a writer to make this call`,
    { data: { required_role: "writer", role: "reader" } },
  );
}

/** True when `code` holds `server` as a word (not inside a longer identifier): `server.x`, `"server.x"`, `server[`. */
function namesServer(code: string, server: string): boolean {
  for (let at = code.indexOf(server); at >= 0; at = code.indexOf(server, at + 1)) {
    const before = code[at - 1];
    const after = code[at + server.length];
    if (!isIdentifierChar(before) && !isIdentifierChar(after)) return true;
  }
  return false;
}

function isIdentifierChar(char: string | undefined): boolean {
  return char !== undefined && /[A-Za-z0-9_$]/.test(char);
}

/**
 * `cli_run` and the `cli` namespace, which exists even when programs are disabled, so that `cli.rm(...)` answers
 * NOT_ALLOWED saying how to allow it. `suggest` gives close canonical names (`cli.git` for `cli.gti`).
 */
export function defineCliBindings(
  bindings: Bindings,
  cli: CliPort,
  enabled: boolean,
  suggest: (name: string) => string[] = () => [],
): void {
  const run = async (program: unknown, args: unknown, ctx: RunContext) => {
    refuseReader(ctx, `cli_run(${JSON.stringify(String(program)).slice(0, 80)})`, "programs");
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
    return {
      exit_code: result.exit_code,
      stdout: out.text,
      stderr: err.text,
      ...(result.sandbox === undefined ? {} : { sandbox: result.sandbox }),
    };
  };
  bindings.defineFunction("cli_run", ([program, args], ctx) => run(program, args ?? [], ctx));
  const allowed = enabled ? cli.programs().map((p) => p.name) : [];
  bindings.defineNamespace("cli", (program, args, ctx) => {
    // Disabled, the runner's own refusal says how to turn programs on.
    if (!enabled || allowed.includes(program)) return run(program, args, ctx);
    const candidates = suggest(`cli.${program}`).filter((name) => name.startsWith("cli."));
    const hint = candidates.length > 0 ? `did you mean ${candidates.join(", ")}? ` : "";
    throw new CairnError(
      ErrorCode.NOT_ALLOWED,
      `program ${JSON.stringify(program)} is not allowed: ${hint}allowed: ${allowed.join(", ") || "none"} ` +
        `(Object.keys(cli) lists them); add it to [cli] allow in cairn.toml to allow it`,
      { data: { program, allowed, candidates } },
    );
  });
  for (const name of allowed) {
    bindings.defineFunction(`cli.${name}`, (args, ctx) => run(name, args, ctx));
    // The canonical name search_tools and describe_tools give: call_tool("cli.git", {args: ["status"]}).
    bindings.defineCapability(`cli.${name}`, (args, ctx) => run(name, args.args ?? [], ctx));
  }
}

/** At most this many upstream calls of one run are recorded; the rest are counted by the run's host calls. */
const RECORDED_CALLS = 64;

/** The call's value, its digest and size noted in `calls` as it settles (capture only: costs one stringify). */
async function recorded(
  call: Promise<unknown>,
  name: string,
  args: unknown,
  calls: UpstreamCallRecord[],
): Promise<unknown> {
  const record: UpstreamCallRecord = {
    tool: name,
    args_digest: createHash("sha256")
      .update(JSON.stringify(args ?? {}) ?? "")
      .digest("hex")
      .slice(0, 16),
  };
  if (calls.length < RECORDED_CALLS) calls.push(record);
  try {
    const value = await call;
    record.result_chars = JSON.stringify(value)?.length ?? 0;
    return value;
  } catch (error) {
    record.error_code = error instanceof CairnError ? error.code : ErrorCode.INTERNAL;
    throw error;
  }
}
