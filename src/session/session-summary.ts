// A read-only summary of an identity's Session for people watching a server (the web view's sessions pages): who it
// is, its activity and live requests, its handles' metadata and its stores' usage against their limits. Never a
// handle's content, never an MCP session id, never a token (a label derived from the Session's id stands in).
import { createHash } from "node:crypto";
import type { Config } from "../config/schema.js";
import type { Session } from "./session.js";
import type { ClientInfo } from "./session-activity.js";
import type { SpillBudget } from "./spill-budget.js";

/** One handle of a session: what it is, how big, until when; never what it holds. */
export interface HandleSummary {
  /** The `res_` or `art_` handle: usable only by requests of its own identity (its bearer token; on stdio the process). */
  handle: string;
  /** A value of save_result, bytes of save_artifact, or a reply too long for the context window, spilled. */
  kind: "result" | "artifact" | "spill";
  bytes: number;
  /** The label the snippet gave it, when it gave one. */
  label?: string;
  filename?: string;
  /** Artifacts and spills only (a result is JSON). */
  media_type?: string;
  created_at: string;
  expires_at: string;
}

/** Bytes and entries a store holds against its limits; `enabled` false when cairn.toml turned it off. */
export interface StoreUsage {
  enabled: boolean;
  entries: number;
  max_entries: number;
  bytes: number;
  max_total_bytes: number;
}

export interface SessionSummary {
  /**
   * `s-` and 12 hex digits of a SHA-256 of the session id: stable for the session's life, and the id (which with the
   * token that opened it would let a client act through the session) cannot be told from it.
   */
  label: string;
  /** The identity it acts as (an HTTP token's, else the server's [identity]) and its role. */
  identity: { name: string; role: string } | undefined;
  /** As the client named itself in `initialize`; undefined until it has. */
  client: ClientInfo | undefined;
  started_at: string;
  last_active_at: string;
  /** Tool calls begun since it started, and running now (its live requests). */
  calls: number;
  running: number;
  /** Connections it holds open now: 2025 sessions, a stdio connection (2026-07-28 requests hold none). */
  connections: number;
  results: StoreUsage;
  artifacts: StoreUsage;
  /** This session's spilled copies; `process_bytes` of every session against `max_total_bytes` (output.*). */
  spills: { entries: number; bytes: number; process_bytes: number; max_total_bytes: number; max_file_bytes: number };
  /** Newest first (by the stores' millisecond clock; saves of one millisecond in both stores: artifacts first). */
  handles: HandleSummary[];
}

/** The label of a session id: see SessionSummary.label. */
export function sessionLabel(id: string): string {
  return `s-${createHash("sha256").update(`cairn session label v1\0${id}`).digest("hex").slice(0, 12)}`;
}

/**
 * What `session` holds now. Listing its stores drops their expired entries first, as any use of them does, so an
 * expired handle is never shown.
 */
export async function summarizeSession(
  session: Session,
  config: Config,
  spillBudget: SpillBudget,
): Promise<SessionSummary> {
  const results = session.results.enabled ? await session.results.list() : [];
  const artifacts = await session.artifacts.list();
  const resultUsage = await session.results.usage();
  const artifactUsage = await session.artifacts.usage();
  const handles: HandleSummary[] = [
    ...results.map((r) => ({
      handle: r.handle,
      kind: "result" as const,
      bytes: r.bytes,
      ...(r.label === undefined ? {} : { label: r.label }),
      created_at: r.created_at,
      expires_at: r.expires_at,
    })),
    ...artifacts.map((a) => ({
      handle: a.handle,
      kind: a.lane,
      bytes: a.bytes,
      ...(a.label === undefined ? {} : { label: a.label }),
      ...(a.filename === undefined ? {} : { filename: a.filename }),
      media_type: a.media_type,
      created_at: a.created_at,
      expires_at: a.expires_at,
    })),
  ]
    // Each store lists in the order it saved; reversed, a stable sort keeps saves of one millisecond newest first.
    .reverse()
    .sort((a, b) => b.created_at.localeCompare(a.created_at));
  const { activity } = session;
  return {
    label: sessionLabel(session.id),
    identity: session.actor === undefined ? undefined : { name: session.actor.name, role: session.actor.role },
    client: activity.client,
    started_at: new Date(activity.startedAt).toISOString(),
    last_active_at: new Date(activity.lastActiveAt).toISOString(),
    calls: activity.calls,
    running: activity.running,
    connections: activity.connections,
    results: {
      enabled: config.results.enabled,
      entries: resultUsage.entries,
      max_entries: config.results.max_entries,
      bytes: resultUsage.bytes,
      max_total_bytes: config.results.max_total_bytes,
    },
    artifacts: {
      enabled: config.artifacts.enabled,
      entries: artifactUsage.artifact.entries,
      max_entries: config.artifacts.max_entries,
      bytes: artifactUsage.artifact.bytes,
      max_total_bytes: config.artifacts.max_total_bytes,
    },
    spills: {
      entries: artifactUsage.spill.entries,
      bytes: artifactUsage.spill.bytes,
      process_bytes: spillBudget.used,
      max_total_bytes: spillBudget.limit,
      max_file_bytes: config.output.max_file_bytes,
    },
    handles,
  };
}
