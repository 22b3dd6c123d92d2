// What the handle stores answer when they refuse, the same words whichever store holds the handles (the process's
// memory, or the shared backend of a fleet): each error says which limit or rule it met and what to do next.
import { CairnError, ErrorCode } from "../errors.js";
import type { Tombstone } from "./tombstones.js";

export const RESULT_ERROR = "ResultStoreError";
export const ARTIFACT_ERROR = "ArtifactStoreError";

type Kind = "result" | "artifact";

const NAMES: Record<Kind, string> = { result: RESULT_ERROR, artifact: ARTIFACT_ERROR };

export function resultsDisabled(): CairnError {
  return new CairnError(
    ErrorCode.STORE_DISABLED,
    "the result store is disabled (results.enabled = false in cairn.toml): return the value instead, or enable the store",
    { name: RESULT_ERROR },
  );
}

export function artifactsDisabled(): CairnError {
  return new CairnError(
    ErrorCode.STORE_DISABLED,
    "the artifact store is disabled (artifacts.enabled = false in cairn.toml): enable it to save or load artifacts",
    { name: ARTIFACT_ERROR },
  );
}

export function resultTooLarge(bytes: number, limit: number): CairnError {
  return new CairnError(
    ErrorCode.ENTRY_TOO_LARGE,
    `value is ${bytes} bytes as JSON, over results.max_entry_bytes = ${limit}: save a projection (the fields or rows you need), or save the full data with save_artifact`,
    { name: RESULT_ERROR, data: { bytes, limit } },
  );
}

export function resultStoreFull(bytes: number, used: number, limit: number): CairnError {
  return new CairnError(
    ErrorCode.STORE_FULL,
    `result store is full (this value needs ${bytes} bytes, results.max_total_bytes = ${limit}): save a smaller projection`,
    { name: RESULT_ERROR, data: { used, bytes, limit } },
  );
}

export function artifactTooLarge(bytes: number, limit: number): CairnError {
  return new CairnError(
    ErrorCode.ENTRY_TOO_LARGE,
    `artifact is ${bytes} bytes, over artifacts.max_entry_bytes = ${limit}: save a smaller part, or import the file into the workspace`,
    { name: ARTIFACT_ERROR, data: { bytes, limit } },
  );
}

export function spillTooLarge(bytes: number, limit: number): CairnError {
  return new CairnError(
    ErrorCode.ENTRY_TOO_LARGE,
    `output is ${bytes} bytes, over output.max_file_bytes = ${limit} (one spilled copy): return a smaller projection, or save the data with save_result / save_artifact and return its handle`,
    { name: ARTIFACT_ERROR, data: { bytes, limit } },
  );
}

export function artifactStoreFull(
  bytes: number,
  used: { entries: number; bytes: number },
  limits: { max_entries: number; max_total_bytes: number },
): CairnError {
  return new CairnError(
    ErrorCode.STORE_FULL,
    `artifact store is full (${used.entries} entries of artifacts.max_entries = ${limits.max_entries}, ${used.bytes} of artifacts.max_total_bytes = ${limits.max_total_bytes} bytes, this needs ${bytes}; what is left is being written now): save a smaller part, or try again once those saves end`,
    { name: ARTIFACT_ERROR, data: { bytes, used: used.bytes, limit: limits.max_total_bytes } },
  );
}

/** Spilled copies of every identity would pass output.max_total_bytes (`where`: "this process" or "the servers"). */
export function spillsFull(bytes: number, used: number, limit: number, where: string): CairnError {
  return new CairnError(
    ErrorCode.STORE_FULL,
    `spilled copies of ${where} would pass output.max_total_bytes = ${limit} (${used} bytes held by all sessions, ${bytes} more): return a smaller projection, or let another session's copies expire`,
    { name: ARTIFACT_ERROR, data: { bytes, used, limit } },
  );
}

/** A handle that is not (or no longer) the caller's: evicted, when its tombstone says so; else unknown or expired. */
export function handleGone(
  kind: Kind,
  handle: unknown,
  tombstone: Tombstone | undefined,
  ttlSeconds: number,
): CairnError {
  const shown = JSON.stringify(String(handle).slice(0, 80));
  if (tombstone !== undefined) {
    const when = new Date(tombstone.at).toISOString();
    const newer = kind === "result" ? "a newer value" : "a newer artifact";
    const advice =
      kind === "result"
        ? "save the value again, or raise the [results] limits"
        : "save it again, or raise the [artifacts] limits";
    return new CairnError(
      ErrorCode.HANDLE_EVICTED,
      `${kind} handle ${shown} was evicted at ${when} to make room for ${newer} (${tombstone.reason}; the least recently used go first): ${advice}`,
      { name: NAMES[kind], data: { evicted_at: when, reason: tombstone.reason } },
    );
  }
  const message =
    kind === "result"
      ? `result handle ${shown} is unknown or expired (entries live ${ttlSeconds} s, and only for the identity that saved them): save the value again`
      : `artifact handle ${shown} is unknown or expired (artifacts live ${ttlSeconds} s, and only for the identity that saved them)`;
  return new CairnError(ErrorCode.HANDLE_NOT_FOUND, message, { name: NAMES[kind] });
}
