// The bridge's host side: which functions and namespaces a snippet sees and what answers them. Sugar functions
// (`save_result`, `workspace.save`, `linear.list_issues`), namespaces (`cli`, each upstream server) and capabilities
// reached by canonical name through `call_tool` are registered here; the executor only sees paths and JSON text.
import { CairnError, ErrorCode } from "../errors.js";
import { namespaceExpression } from "../registry/identifiers.js";
import type { FunctionShape, HostPayload } from "../sandbox/executor.js";
import { MAX_JSON_DEPTH } from "../sandbox/value-limits.js";
import type { ArtifactInfo } from "../session/artifact-store.js";
import type { Session } from "../session/session.js";

/**
 * JSON text produced on the host, passed to the sandbox as it is (no parse and re-serialize of stored values). It
 * holds no bytes, and nothing in it can stand for bytes: the sandbox reads bytes only under the run's own key.
 */
export class RawJson {
  constructor(readonly text: string) {}
}

/** What a run's host calls can reach. One per run: it collects the artifacts saved during the run. */
export interface RunContext {
  session: Session;
  signal: AbortSignal;
  /** Every artifact saved during the run, in order; listed in the run's reply. */
  savedArtifacts: ArtifactInfo[];
  /**
   * Reserves `bytes` for an answer the host is about to read for this run (a loaded artifact); the returned function
   * gives them back once the answer is sent. Answers being read count against sandbox.memory_mb, like arguments in
   * flight: forty parallel loads of a 32 MiB artifact would otherwise hold 1.3 GB on the host for a 64 MiB run.
   * Past the budget it throws MEMORY_LIMIT, which stops the run (a snippet cannot catch it).
   */
  holdAnswer(bytes: number): () => void;
  /** Hears progress an upstream server reports on a call of this run; absent when nobody asked for progress. */
  upstreamProgress?: ((capability: string, progress: UpstreamProgress) => void) | undefined;
  /** The run's upstream calls, for capture (execute-code.ts RunCapture); absent when nothing captures. */
  upstreamCalls?: UpstreamCallRecord[] | undefined;
  /**
   * Asks the person behind the host to approve one upstream call (MCP elicitation); absent when the host cannot ask
   * (no elicitation, the CLI), and the call then fails with APPROVAL_REQUIRED and a handle.
   */
  askPerson?: AskPerson | undefined;
  /** Stops this call's run deadline until the returned function is called (a person deciding); the executor bounds it. */
  holdDeadline?: (() => () => void) | undefined;
  /** The trace of the request that started the run (or one minted for it); absent outside a served request. */
  trace?: RunTrace | undefined;
  /** Saved snippets the run's run_saved calls loaded (saved-bindings.ts), listed in its reply. */
  savedRuns?: { name: string; artifact_id: string; version: number }[] | undefined;
}

/**
 * The W3C trace a run belongs to (restated from upstream/trace-context.ts: codemode imports no upstream): each
 * upstream call of the run is sent as a child span of it (decision 0262).
 */
export interface RunTrace {
  traceparent: string;
  tracestate?: string | undefined;
}

/** A person's answer to an approval request (upstream/approval-gate.ts AskPerson, restated: codemode imports no upstream). */
export type AskPerson = (question: {
  message: string;
  signal: AbortSignal;
  timeoutMs: number;
}) => Promise<"approve" | "decline" | "cancel">;

/** One upstream call of a run as capture keeps it: never its arguments or its reply, only their digest and size. */
export interface UpstreamCallRecord {
  tool: string;
  /** First 16 hex digits of the SHA-256 of the arguments' JSON. */
  args_digest: string;
  /** Characters of the reply's JSON; absent for a failed call. */
  result_chars?: number;
  error_code?: string;
}

/** Progress an upstream server reported on one call (the fields of MCP `notifications/progress`). */
export interface UpstreamProgress {
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
}

/** A sugar function: positional arguments as the snippet passed them. */
export type SugarFunction = (args: unknown[], ctx: RunContext) => Promise<unknown>;
/** A capability reached by canonical name: one arguments object. */
export type CapabilityFunction = (args: Record<string, unknown>, ctx: RunContext) => Promise<unknown>;

/** Answers `call_tool` for names the table does not hold (the upstream gateway). */
export type FallbackDispatcher = (name: string, args: Record<string, unknown>, ctx: RunContext) => Promise<unknown>;

/**
 * Answers a member of a namespace that no function of the table holds (`cli.rm`): with the call, or with the error
 * that says what exists.
 */
export type NamespaceFallback = (member: string, args: unknown[], ctx: RunContext) => Promise<unknown>;

/** Namespaces whose functions change while the server runs (upstream tools come and go). */
export interface FunctionProvider {
  /** The namespaces it answers, listed even while they hold no function (a server still starting). */
  namespaces(): string[];
  /** `namespace.member` paths to expose now. */
  paths(): string[];
  /** Answers any path under its namespaces, listed or not (a tool added since, an alias, a mistyped name). */
  call(path: string, args: unknown[], ctx: RunContext): Promise<unknown>;
}

/** How a function or capability takes its arguments: what the sandbox is told (FunctionShape), and bytes. */
export interface BindingShape extends FunctionShape {
  /**
   * Its arguments keep bytes as bytes. Anywhere else (a saved result, an upstream tool's JSON arguments) a byte
   * array would arrive as something else, `{"type": "Buffer", "data": [...]}`, so it is refused (decision 0251).
   */
  keepsBytes?: boolean | undefined;
}

/** call_tool's own shape: its first argument names the capability whose shape applies. */
const CALL_TOOL_SHAPE: FunctionShape = { params: ["name", "args"], dispatches: true };

export interface BindingsOptions {
  /** Canonical names close to a mistyped one, for the error of an unknown function. @default none */
  suggest?: (name: string) => string[];
}

/**
 * The functions of every run. Paths split at their first dot: `namespace.member`, where the member may hold any
 * character (`everything.get-sum`, `odd.2fa.check`); a path without a dot is a global function. Every namespace is
 * listed to the executor as `namespace.` too, so it exists even with no member, and a member it lacks reaches
 * `answer` (the sandbox sends the call instead of failing with "not a function").
 */
export class Bindings {
  private readonly sugar = new Map<string, SugarFunction>();
  private readonly capabilities = new Map<string, CapabilityFunction>();
  private readonly namespaces = new Map<string, NamespaceFallback | undefined>();
  private fallback: FallbackDispatcher | undefined;
  private readonly providers: FunctionProvider[] = [];
  private readonly shapes = new Map<string, BindingShape>();

  constructor(private readonly options: BindingsOptions = {}) {}

  /**
   * Adds a function a snippet calls by `path` ("save_result", "workspace.save", "linear.list_issues"); `shape` says
   * how it takes its arguments (the sandbox is told it with every run).
   */
  defineFunction(path: string, fn: SugarFunction, shape?: BindingShape): this {
    this.sugar.set(path, fn);
    if (shape !== undefined) this.shapes.set(path, shape);
    return this;
  }

  /** Adds a capability `call_tool(name, args)` reaches; `shape` as for defineFunction. */
  defineCapability(name: string, fn: CapabilityFunction, shape?: BindingShape): this {
    this.capabilities.set(name, fn);
    if (shape !== undefined) this.shapes.set(name, shape);
    return this;
  }

  /** The shapes the sandbox checks arguments by (ExecutionRequest.shapes), call_tool's included. */
  functionShapes(): Record<string, FunctionShape> {
    const shapes: Record<string, FunctionShape> = { call_tool: CALL_TOOL_SHAPE };
    // What only the host reads (keepsBytes) is not sent; a shape left empty is not sent either.
    for (const [name, { keepsBytes: _, ...shape }] of this.shapes) {
      if (Object.values(shape).some((v) => v !== undefined)) shapes[name] = shape;
    }
    return shapes;
  }

  /** Adds a namespace that exists even without functions; `fallback` answers the members it does not hold. */
  defineNamespace(name: string, fallback?: NamespaceFallback): this {
    this.namespaces.set(name, fallback);
    return this;
  }

  setFallback(dispatcher: FallbackDispatcher): this {
    this.fallback = dispatcher;
    return this;
  }

  addProvider(provider: FunctionProvider): this {
    this.providers.push(provider);
    return this;
  }

  /**
   * Paths to expose in the sandbox, `call_tool` included, and `namespace.` for every namespace. Built-ins win over a
   * provider's namespace of the same name.
   */
  functionPaths(): string[] {
    const paths = new Set(["call_tool", ...this.sugar.keys()]);
    const builtIn = this.builtInRoots();
    for (const name of this.namespaces.keys()) paths.add(`${name}.`);
    for (const provider of this.providers) {
      // A provider may not shadow a built-in namespace (`workspace.x` from an upstream server named workspace).
      for (const name of provider.namespaces()) if (!builtIn.has(name)) paths.add(`${name}.`);
      for (const path of provider.paths()) if (!builtIn.has(splitPath(path).root)) paths.add(path);
    }
    return [...paths];
  }

  /** Roots of the built-in functions and the defined namespaces: no provider answers for them. */
  private builtInRoots(): Set<string> {
    const roots = new Set(this.namespaces.keys());
    for (const path of this.sugar.keys()) roots.add(splitPath(path).root);
    roots.add("call_tool");
    return roots;
  }

  /** Answers one host call; throws CairnError for the snippet to catch. */
  async answer(path: string, payload: HostPayload, ctx: RunContext): Promise<HostPayload> {
    const args = parseArgs(payload);
    if (payload.bytes.length > 0) this.refuseBytesOutside(path === "call_tool" ? args[0] : path, args);
    let value: unknown;
    if (path === "call_tool") {
      const [name, callArgs] = args;
      value = await this.callTool(name, callArgs, ctx);
    } else {
      const fn = this.sugar.get(path);
      if (fn) value = await fn(args, ctx);
      else value = await this.fromProviders(path, args, ctx);
    }
    return toPayload(value, payload.key ?? "");
  }

  /** A path no sugar function holds: a namespace's fallback, the provider of its namespace, or TOOL_NOT_FOUND. */
  private async fromProviders(path: string, args: unknown[], ctx: RunContext): Promise<unknown> {
    const { root, member } = splitPath(path);
    if (member !== undefined) {
      const fallback = this.namespaces.get(root);
      if (fallback) return fallback(member, args, ctx);
      if (!this.builtInRoots().has(root)) {
        const provider = this.providers.find((p) => p.namespaces().includes(root));
        if (provider) return provider.call(path, args, ctx);
      }
    }
    const candidates = this.options.suggest?.(path) ?? [];
    const hint = candidates.length > 0 ? `did you mean ${candidates.join(", ")}? ` : "";
    const listing = member !== undefined ? `Object.keys(${namespaceExpression(root)}) lists what ${root} holds; ` : "";
    const shown = cut(path);
    throw new CairnError(
      ErrorCode.TOOL_NOT_FOUND,
      `no function ${shown}: ${hint}${listing}search_tools finds capabilities by keyword`,
      { data: { name: shown, candidates } },
    );
  }

  /** Throws NOT_JSON naming the first byte array of `args` unless `target` keeps bytes. */
  private refuseBytesOutside(target: unknown, args: unknown[]): void {
    const shape = typeof target === "string" ? this.shapes.get(target) : undefined;
    if (shape?.keepsBytes) return;
    const name = typeof target === "string" ? cut(target) : "call_tool";
    // Found again only for the message: the walk is iterative and stops at the first byte array.
    let where = "an argument";
    const stack: [unknown, string][] = args.map((arg, i) => [arg, `argument ${i + 1}`]);
    stack.reverse();
    while (stack.length > 0) {
      const [value, at] = stack.pop() as [unknown, string];
      if (value instanceof Uint8Array) {
        where = at;
        break;
      }
      if (value === null || typeof value !== "object") continue;
      const entries = Array.isArray(value)
        ? value.map((item, i): [unknown, string] => [item, `${at}[${i}]`])
        : Object.entries(value).map(([key, item]): [unknown, string] => [item, `${at}.${key}`]);
      for (let i = entries.length - 1; i >= 0; i--) stack.push(entries[i] as [unknown, string]);
    }
    throw new CairnError(
      ErrorCode.NOT_JSON,
      `${where} of ${name} is a Uint8Array: bytes are not JSON and would not reach ${name} as bytes; save them with save_artifact or workspace.save and pass the handle`,
      { name: shape?.errorName ?? "ArgumentError" },
    );
  }

  async callTool(name: unknown, args: unknown, ctx: RunContext): Promise<unknown> {
    if (typeof name !== "string" || name.length === 0) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        'call_tool needs a capability name, e.g. call_tool("server.tool", {...})',
      );
    }
    if (args !== undefined && args !== null && (typeof args !== "object" || Array.isArray(args))) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `call_tool("${name}", args): args must be an object`);
    }
    const object = (args ?? {}) as Record<string, unknown>;
    if (name.startsWith("saved:")) {
      // Saved snippets run inside the caller's run, which only run_saved can do (decision 0242).
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `${cut(name)} is a saved snippet: run it with run_saved(${JSON.stringify(cut(name.slice(6)))}, inputs)`,
      );
    }
    const capability = this.capabilities.get(name);
    if (capability) return capability(object, ctx);
    if (this.fallback) return this.fallback(name, object, ctx);
    throw new CairnError(
      ErrorCode.TOOL_NOT_FOUND,
      `no capability named "${name}": use search_tools to find capabilities, and their canonical names (server.tool)`,
    );
  }
}

/** A name as messages show it: a snippet may send a name of any length. */
export function cut(name: string, max = 200): string {
  return name.length > max ? `${name.slice(0, max)}…` : name;
}

/** `namespace.member` at the first dot (members may hold dots); `member` is undefined for a global function. */
export function splitPath(path: string): { root: string; member: string | undefined } {
  const dot = path.indexOf(".");
  return dot < 0 ? { root: path, member: undefined } : { root: path.slice(0, dot), member: path.slice(dot + 1) };
}

function parseArgs({ json, bytes, key }: HostPayload): unknown[] {
  let parsed: unknown;
  try {
    // Only the run's own key names bytes, and only when the call carries some: any other object stays as it is.
    parsed =
      bytes.length === 0 || key === undefined || !json.includes(key)
        ? JSON.parse(json)
        : JSON.parse(json, (_key, value: unknown) => {
            if (value !== null && typeof value === "object" && !Array.isArray(value)) {
              const index = (value as Record<string, unknown>)[key];
              if (typeof index === "number" && Object.keys(value).length === 1) {
                const found = bytes[index];
                if (found) return Buffer.from(found.buffer, found.byteOffset, found.byteLength);
              }
            }
            return value;
          });
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "the host call's arguments are not a JSON array: pass plain data");
  }
  return parsed;
}

/**
 * Host values to what the sandbox receives: JSON text with bytes beside it, named by the run's `key`; RawJson passes
 * through. Only a real byte array becomes bytes (a reply's `{"type": "Buffer", "data": [...]}` stays that object),
 * and a value nested deeper than MAX_JSON_DEPTH is refused with NOT_JSON while it is written, in the same pass, before
 * the engine's recursion could overflow on it.
 */
export function toPayload(value: unknown, key: string): HostPayload {
  if (value instanceof RawJson) return { json: value.text, bytes: [] };
  if (value === undefined) return { json: "null", bytes: [] };
  const bytes: Uint8Array[] = [];
  const tag = (item: Uint8Array) => {
    bytes.push(item);
    return { [key]: bytes.length - 1 };
  };
  if (value instanceof Uint8Array) return { json: JSON.stringify(tag(value)), bytes, key };
  // The containers being written, outermost first (see the prelude's replacer): JSON.stringify calls the replacer
  // with the container it is writing as `this`, so popping to it gives the current value's level.
  const holders: unknown[] = [];
  let top = -1;
  let json: string | undefined;
  try {
    json = JSON.stringify(value, function (this: unknown, k: string, item: unknown) {
      if (top < 0) holders[++top] = this;
      else while (top > 0 && holders[top] !== this) top--;
      // The holder's own property, before toJSON: a Buffer's toJSON would hide that it is bytes.
      const raw = (this as Record<string, unknown>)[k];
      if (raw instanceof Uint8Array) item = tag(raw);
      if (item !== null && typeof item === "object") {
        if (top >= MAX_JSON_DEPTH) throw new ValueTooDeep();
        holders[++top] = item;
      }
      return item;
    });
  } catch (error) {
    if (error instanceof ValueTooDeep) {
      throw new CairnError(
        ErrorCode.NOT_JSON,
        `the answer is nested deeper than ${MAX_JSON_DEPTH} levels, which no snippet value may be: ask for less (a page, a projection), or read the data as text`,
        { name: "SandboxError", data: { max_depth: MAX_JSON_DEPTH } },
      );
    }
    if (error instanceof RangeError) {
      // V8's own bound on one string: the answer cannot be written at all.
      throw new CairnError(
        ErrorCode.TOO_LARGE,
        `the answer is too large to pass to the snippet: ask for less (a page, a projection)`,
        {
          name: "SandboxError",
        },
      );
    }
    throw error;
  }
  return { json: json ?? "null", bytes, key };
}

class ValueTooDeep extends Error {}
