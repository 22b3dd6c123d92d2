// Capture: compact observations of what ran through Cairn (each execute_code run, each upstream call it made, each
// workspace write), one batch per run written after the reply, off the run's path. Values, bodies and string
// literals never reach an observation: digests, sizes, counts, names and codes only.
import { createHash } from "node:crypto";
import { cut } from "../codemode/bindings.js";
import type { CapturedRun, RunCapture } from "../codemode/execute-code.js";
import { type Logger, redactSecrets } from "../log.js";
import type { Operation } from "../operations/operation.js";
import type { Session } from "../session/session.js";
import type { MemoryStore, NewObservation } from "../workspace/catalog/memory-store.js";

/** Batches waiting for the catalog at once; past it a batch is dropped and counted, so capture never piles up. */
const MAX_PENDING = 64;
/** Characters of a snippet's first line kept. */
const FIRST_LINE = 160;
/** Characters of the first line read to find its literals (templates nest: this bounds the depth too). */
const SCANNED = 4_096;
/** Characters of a host call's or upstream tool's name kept: a snippet chooses the names it calls, any length. */
const NAME_CHARS = 64;
/** Bytes of a run's host call counts (names as JSON): the rest are counted as "other", so the detail always fits. */
const HOST_CALLS_BYTES = 480;
/** Versions one write observation names at most. */
const WRITE_VERSIONS = 16;
/** Operations whose writes are not workspace writes worth recalling (memory's own, maintenance, runs). */
const NOT_CAPTURED = new Set(["execute_code", "remember", "prune"]);

export interface CaptureHealth {
  enabled: boolean;
  /** Observations written since the process started. */
  recorded: number;
  /** Batches that failed to write (the catalog refused or was unavailable). */
  failed: number;
  /** Batches dropped because MAX_PENDING were already waiting. */
  dropped: number;
  pending: number;
  last_error?: string;
}

export class SessionCapture implements RunCapture {
  private readonly writes = new Set<Promise<void>>();
  private readonly health_: CaptureHealth;

  constructor(
    /** Set once the served profile is known (app.selectTools); read on each run. */
    public enabled: boolean,
    private readonly store: () => Promise<MemoryStore>,
    private readonly logger: Logger,
  ) {
    this.health_ = { enabled, recorded: 0, failed: 0, dropped: 0, pending: 0 };
  }

  run(session: Session, run: CapturedRun): void {
    if (!this.enabled) return;
    let observations: NewObservation[];
    try {
      observations = runObservations(run);
    } catch (error) {
      // Called on the run's path: a capture that cannot describe the run is counted, never the run's failure.
      this.failed(error);
      return;
    }
    this.record(session.id, observations);
  }

  /** A workspace write an operation made (its answer names the versions). */
  write(sessionId: string, operation: string, answer: unknown): void {
    if (!this.enabled) return;
    this.record(sessionId, [writeObservation(operation, answer)]);
  }

  health(): CaptureHealth {
    return { ...this.health_, enabled: this.enabled, pending: this.writes.size };
  }

  /**
   * Resolves once every batch handed over so far is written or has failed; batches handed over meanwhile (other
   * sessions keep running) are not waited for, so a steady stream of runs cannot hold a caller forever. Never throws.
   */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.writes]);
  }

  private failed(error: unknown): void {
    this.health_.failed += 1;
    this.health_.last_error = error instanceof Error ? error.message : String(error);
    this.logger.warn("capture failed; the run itself is unaffected", { error: this.health_.last_error });
  }

  private record(sessionId: string, observations: NewObservation[]): void {
    if (this.writes.size >= MAX_PENDING) {
      this.health_.dropped += 1;
      return;
    }
    const write = (async () => {
      try {
        await (await this.store()).record(sessionId, observations);
        this.health_.recorded += observations.length;
      } catch (error) {
        this.failed(error);
      }
    })();
    this.writes.add(write);
    void write.finally(() => this.writes.delete(write));
  }
}

/**
 * `operations` with capture of the workspace writes they make: each operation that is not read-only, called from a
 * tool or a snippet, records one `write` observation after it succeeds. The command line is not captured.
 */
export function capturingWrites(operations: readonly Operation[], capture: SessionCapture): Operation[] {
  return operations.map((operation) => {
    if (operation.annotations.readOnlyHint || NOT_CAPTURED.has(operation.name)) return operation;
    const handler = operation.handler;
    return {
      ...operation,
      async handler(args, ctx) {
        const answer = await handler(args, ctx);
        if (ctx.surface !== "cli") capture.write(ctx.session.id, operation.name, answer);
        return answer;
      },
    };
  });
}

/** The run and each upstream call it made, linked by the snippet's digest. */
export function runObservations(run: CapturedRun): NewObservation[] {
  const digest = sha256(run.code).slice(0, 16);
  const line = firstLine(run.code);
  const hostCalls = boundedCalls(run.host_calls);
  const tools = Object.keys(hostCalls);
  const observations: NewObservation[] = [
    {
      kind: "run",
      label: [`${run.ok ? "ok" : `failed ${run.error_code ?? ""}`}:`, line, ...tools].join(" "),
      detail: {
        digest,
        first_line: line,
        ok: run.ok,
        ...(run.error_code === undefined ? {} : { error_code: run.error_code }),
        ms: run.ms,
        host_calls: hostCalls,
        handles: run.handles.slice(0, 16),
        upstream_calls: run.upstream.length,
      },
    },
  ];
  for (const call of run.upstream) {
    const tool = cut(redactSecrets(call.tool), NAME_CHARS);
    observations.push({
      kind: "upstream",
      label: `${tool}${call.error_code === undefined ? "" : ` failed ${call.error_code}`}`,
      detail: { ...call, tool, run: digest },
    });
  }
  return observations;
}

/** `calls` with each name cut to NAME_CHARS, and the names past HOST_CALLS_BYTES counted as "other". */
function boundedCalls(calls: Record<string, number>): Record<string, number> {
  const bounded: Record<string, number> = Object.create(null);
  let bytes = 0;
  for (const [name, count] of Object.entries(calls)) {
    let key = cut(redactSecrets(name), NAME_CHARS);
    if (!(key in bounded)) {
      bytes += Buffer.byteLength(JSON.stringify(key), "utf8") + 8;
      if (bytes > HOST_CALLS_BYTES) key = "other";
    }
    bounded[key] = (bounded[key] ?? 0) + count;
  }
  return bounded;
}

/** `save`: the versions its answer names (`name v3 art_…`), or the operation alone when it names none. */
export function writeObservation(operation: string, answer: unknown): NewObservation {
  const versions = versionsIn(answer, 3).slice(0, WRITE_VERSIONS);
  const label = [operation, ...versions.map((v) => `${v.name} v${v.version}`)].join(" ");
  const first = versions[0];
  return {
    kind: "write",
    label,
    detail: { operation, versions },
    ...(first === undefined ? {} : { artifact_id: first.artifact_id }),
  };
}

interface VersionRef {
  artifact_id: string;
  name: string;
  version: number;
}

/** Objects `{artifact_id, name, version}` in `value`, to `depth` levels, without repeats. */
function versionsIn(value: unknown, depth: number, found: VersionRef[] = []): VersionRef[] {
  if (depth < 0 || value === null || typeof value !== "object" || found.length >= WRITE_VERSIONS) return found;
  if (Array.isArray(value)) {
    for (const item of value.slice(0, WRITE_VERSIONS)) versionsIn(item, depth - 1, found);
    return found;
  }
  const record = value as Record<string, unknown>;
  const { artifact_id, name, version } = record;
  if (typeof artifact_id === "string" && typeof name === "string" && typeof version === "number") {
    if (!found.some((f) => f.artifact_id === artifact_id)) found.push({ artifact_id, name, version });
  }
  for (const child of Object.values(record)) {
    if (child !== null && typeof child === "object") versionsIn(child, depth - 1, found);
  }
  return found;
}

/**
 * The snippet's first non-blank line with every string literal emptied (SQL text, paths, secrets in arguments stay
 * out) and a literal still open at the line's end cut off; control characters become spaces, registered secrets
 * "[redacted]".
 */
export function firstLine(code: string): string {
  // Control characters (a terminal escape, a NUL, a lone carriage return) become spaces: the line is shown as text.
  // A registered secret (a `${VAR}` value of cairn.toml, a token) never lands, in a comment or a name either.
  // Only its head is scanned (SCANNED characters): a literal still open there is cut off like one open at the end.
  const head = (code.split("\n", 64).find((l) => l.trim() !== "") ?? "").slice(0, SCANNED);
  const line = redactSecrets(head.replace(CONTROL, " ")).trim();
  let out = "";
  for (let i = 0; i < line.length && out.length < FIRST_LINE; i++) {
    const char = line.charAt(i);
    if (char !== '"' && char !== "'" && char !== "`") {
      out += char;
      continue;
    }
    const end = literalEnd(line, i);
    out += end < line.length ? `${char}…${char}` : `${char}…`;
    i = end;
  }
  return out.length <= FIRST_LINE ? out : `${out.slice(0, FIRST_LINE - 1)}…`;
}

/**
 * The index of the quote closing the literal opened at `start` (the line's length when it stays open). A template's
 * `${...}` is skipped whole, literals nested in it included: `${`inner`}` does not end the outer template.
 */
function literalEnd(line: string, start: number): number {
  const quote = line.charAt(start);
  let at = start + 1;
  while (at < line.length) {
    const char = line.charAt(at);
    if (char === "\\") at += 2;
    else if (char === quote) return at;
    else if (quote === "`" && char === "$" && line.charAt(at + 1) === "{") at = expressionEnd(line, at + 2);
    else at += 1;
  }
  return line.length;
}

/** The index just past the `}` closing a template expression that starts at `start`. */
function expressionEnd(line: string, start: number): number {
  let depth = 1;
  let at = start;
  while (at < line.length) {
    const char = line.charAt(at);
    if (char === '"' || char === "'" || char === "`") at = literalEnd(line, at) + 1;
    else {
      if (char === "{") depth += 1;
      else if (char === "}" && --depth === 0) return at + 1;
      at += 1;
    }
  }
  return line.length;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters removed
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
