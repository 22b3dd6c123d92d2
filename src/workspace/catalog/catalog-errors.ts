// The errors every Catalog backend throws (and the list cursor they check), in one place so SQLite and PostgreSQL
// answer the same contract breach with the same code, message and data.
import { CairnError, ErrorCode } from "../../errors.js";
import { MAX_DEPENDENCIES } from "./catalog.js";
import type { Fence } from "./claim-store.js";

/** A list cursor is the write order (`seq`) of the last version listed, in base 36. */
const CURSOR = /^[0-9a-z]{1,11}$/;

/** The cursor `list` gives after the version written at `seq`. */
export function cursorOf(seq: number): string {
  return seq.toString(36);
}

/** The `seq` a list cursor stands for; INVALID_ARGUMENT for anything `cursorOf` did not make. */
export function cursorSeq(cursor: string): number {
  const seq = CURSOR.test(cursor) ? Number.parseInt(cursor, 36) : Number.NaN;
  if (!Number.isSafeInteger(seq)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `cursor ${JSON.stringify(cursor.slice(0, 40))} is not one this workspace gave: pass the next_cursor of the previous page, or none for the first page`,
    );
  }
  return seq;
}

export function notFound(ref: string): CairnError {
  return new CairnError(ErrorCode.NOT_FOUND, `no artifact "${ref}" in this workspace: use find to look it up`, {
    data: { ref },
  });
}

export function versionConflict(name: string, current: number | undefined, expected: number | undefined): CairnError {
  const message =
    current === undefined
      ? `"${name}" has no current version (expected_version ${expected}): save without expected_version to create it`
      : expected === undefined
        ? `"${name}" already exists at version ${current}: pass expected_version ${current} to replace it`
        : `"${name}" is at version ${current}, not ${expected}: inspect it, then pass expected_version ${current}`;
  return new CairnError(ErrorCode.VERSION_CONFLICT, message, {
    data: { name, current_version: current ?? null, expected_version: expected ?? null },
  });
}

export function tooManyDependencies(): CairnError {
  return new CairnError(ErrorCode.TOO_LARGE, `a version may pin at most ${MAX_DEPENDENCIES} dependencies`);
}

export function dependenciesNotFound(missing: string[]): CairnError {
  return new CairnError(
    ErrorCode.NOT_FOUND,
    `dependencies not found: ${missing.join(", ")}: pin ids (ws_...) or names that exist in this workspace`,
    { data: { missing } },
  );
}

/** `deleteVersion` of a name's current version. */
export function currentVersionRefused(artifactId: string, name: string, version: number): CairnError {
  return new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `${artifactId} is the current version (${version}) of "${name}": to remove it, delete the name "${name}" with expected_version ${version}`,
    { data: { name, current_version: version } },
  );
}

/** A version outside the removal that depends on one inside it. */
export interface PinBlocker {
  pinned: string;
  artifact_id: string;
  name: string;
  version: number;
}

export function pinned(blockers: PinBlocker[]): CairnError {
  const named = blockers.map((b) => `${b.name} v${b.version} (${b.artifact_id})`);
  return new CairnError(
    ErrorCode.PINNED,
    `refused: pinned by ${named.join(", ")}: delete or prune those first, or keep this version`,
    { data: { blockers } },
  );
}

export function chunksOutOfOrder(artifactId: string, from: number): CairnError {
  return new CairnError(
    ErrorCode.INTERNAL,
    `chunks of ${artifactId} must follow each other from byte ${from}: report this`,
  );
}

export function claimHeld(resource: string, holder: string, expiresAt: number, now: number): CairnError {
  const seconds = Math.max(1, Math.ceil((expiresAt - now) / 1000));
  return new CairnError(
    ErrorCode.CLAIM_HELD,
    `${resource} is claimed by ${holder} for ${seconds} more s (until ${new Date(expiresAt).toISOString()}): wait until then and claim it again, or ask ${holder} to release it`,
    { data: { resource, holder, expires_at: expiresAt } },
  );
}

/** The claims row a fence is checked against. */
export interface ClaimState {
  last_ticket: number;
  holder: string | null;
  expires_at: number | null;
}

export function fenced(fence: Fence, row: ClaimState | undefined, now: number): CairnError {
  const why =
    row === undefined
      ? `${fence.resource} was never claimed`
      : row.last_ticket > fence.ticket
        ? `a newer claim (ticket ${row.last_ticket}${row.holder === null ? ", since released" : ` by ${row.holder}`}) replaced ticket ${fence.ticket}`
        : row.last_ticket < fence.ticket
          ? `ticket ${fence.ticket} was never given (the newest is ${row.last_ticket})`
          : row.holder === null
            ? `ticket ${fence.ticket} was released`
            : `ticket ${fence.ticket} is held by ${row.holder}, not by ${fence.holder}`;
  const holder = row?.holder != null && (row.expires_at ?? 0) > now ? row.holder : undefined;
  return new CairnError(
    ErrorCode.FENCED,
    `the claim on ${fence.resource} no longer holds: ${why}. Nothing was written; read the current state (another holder may have written since), then claim ${fence.resource} again and retry with the new ticket`,
    { data: { resource: fence.resource, ticket: fence.ticket, last_ticket: row?.last_ticket ?? 0, holder } },
  );
}
