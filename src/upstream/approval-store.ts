// Pending approvals of upstream calls, as files in the workspace directory (`approvals/`, private to the account), so
// an approver in another process (the CLI, another `cairn serve`) can replay a call this one was refused. The call's
// arguments are stored encrypted under a key only the handle carries: the directory alone never reveals them.
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CairnError, ErrorCode } from "../errors.js";

/** `apv_` + 24 hex digits of id + `_` + 43 base64url characters of secret (32 random bytes). */
const HANDLE_PATTERN = /^apv_([0-9a-f]{24})_([A-Za-z0-9_-]{43})$/;
const RECORD_VERSION = 1;

/** One call waiting for an approver, as the store gives it back once. */
export interface PendingCall {
  /** The handle's public half: names the approval in events and files, never lets anyone replay it. */
  id: string;
  server: string;
  tool: string;
  args: Record<string, unknown>;
  /** SHA-256 (hex) of the canonical JSON of `{server, tool, args}`: what the approval is bound to. */
  digest: string;
  requested_by: string;
  requested_at: string;
  expires_at: string;
}

interface StoredRecord {
  v: number;
  id: string;
  server: string;
  tool: string;
  digest: string;
  requested_by: string;
  requested_at: string;
  expires_at: string;
  /** SHA-256 of the handle's secret: a handle with another secret is refused before any decryption. */
  secret_check: string;
  /** AES-256-GCM of the arguments' canonical JSON; absent once used (the tombstone keeps the rest). */
  sealed?: { iv: string; tag: string; data: string };
  used_at?: string;
  used_by?: string;
  /** Set when the handle was spent by a decline (nothing was called). */
  declined?: true;
}

export interface ApprovalStoreOptions {
  /** The directory of the files (created 0700 on first use). */
  dir: string;
  /** Seconds a handle stays usable. */
  ttlSeconds: number;
  /** Handles waiting at once; one more is refused. */
  maxPending: number;
  /** Milliseconds since the epoch. @default Date.now */
  now?: () => number;
}

/** What `collect` found past its expiry: recorded by the caller as expiry events. */
export interface ExpiredCall {
  id: string;
  server: string;
  tool: string;
  digest: string;
}

/**
 * Guarantees: a handle is spent at most once, by a replay or a decline, across processes (the pending file is renamed
 * to its tombstone, and only one rename wins); `peek` reads a call without spending it; a handle with any character changed is refused (APPROVAL_INVALID) and cannot decrypt the
 * arguments; a stored call whose decrypted arguments no longer hash to its digest is refused (APPROVAL_INVALID); past
 * `ttlSeconds` the handle is refused (APPROVAL_EXPIRED); at most `maxPending` unexpired handles exist.
 */
export class ApprovalStore {
  private readonly now: () => number;

  constructor(private readonly options: ApprovalStoreOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Stores a call to approve and returns its one-time handle (`apv_…`) with the digest and expiry. Removes the
   * expired records first (returned in `expired`); refuses with APPROVAL_REQUIRED (no handle) past `maxPending`.
   */
  async add(call: { server: string; tool: string; args: Record<string, unknown>; requested_by: string }): Promise<{
    handle: string;
    id: string;
    digest: string;
    expires_at: string;
    expired: ExpiredCall[];
  }> {
    await mkdir(this.options.dir, { recursive: true, mode: 0o700 });
    const { pending, expired } = await this.collect();
    if (pending >= this.options.maxPending) {
      throw new CairnError(
        ErrorCode.APPROVAL_REQUIRED,
        `${call.server}.${call.tool} needs a person's approval, and ${pending} approval handles are already waiting (approvals.max_pending = ${this.options.maxPending}): let them expire (approvals.handle_ttl_s) or have them approved, then run the snippet again`,
        { data: { server: call.server, tool: call.tool, pending, max_pending: this.options.maxPending } },
      );
    }
    const id = randomBytes(12).toString("hex");
    const secret = randomBytes(32).toString("base64url");
    const digest = callDigest(call.server, call.tool, call.args);
    const at = this.now();
    const expiresAt = new Date(at + this.options.ttlSeconds * 1000).toISOString();
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", keyOf(secret), iv);
    // The digest, server, tool and expiry are bound too: a record edited to name another call or to live longer
    // no longer decrypts.
    cipher.setAAD(Buffer.from(boundText(id, digest, call.server, call.tool, expiresAt)));
    const data = Buffer.concat([cipher.update(canonicalJson(call.args), "utf8"), cipher.final()]);
    const record: StoredRecord = {
      v: RECORD_VERSION,
      id,
      server: call.server,
      tool: call.tool,
      digest,
      requested_by: call.requested_by,
      requested_at: new Date(at).toISOString(),
      expires_at: expiresAt,
      secret_check: sha256(secret),
      sealed: { iv: iv.toString("base64"), tag: cipher.getAuthTag().toString("base64"), data: data.toString("base64") },
    };
    await this.writeAtomic(`${id}.json`, record);
    return { handle: `apv_${id}_${secret}`, id, digest, expires_at: record.expires_at, expired };
  }

  /**
   * Takes the call a handle stands for, once: refuses an unknown or altered handle (APPROVAL_INVALID), a used one
   * (APPROVAL_USED), an expired one (APPROVAL_EXPIRED, and the record is removed). `approver` is kept in the tombstone;
   * `declined` marks it spent by a decline, so a later use says so.
   */
  async take(handle: string, approver: string, options: { declined?: boolean } = {}): Promise<PendingCall> {
    const { id, secret, record, pendingFile } = await this.open(handle);
    // One rename wins across processes: the loser finds no pending file and is told the handle was used.
    try {
      await rename(pendingFile, join(this.options.dir, `${id}.used`));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return this.take(handle, approver, options);
      throw error;
    }
    const { sealed, ...rest } = record;
    await this.writeAtomic(`${id}.used`, {
      ...rest,
      used_at: new Date(this.now()).toISOString(),
      used_by: approver,
      ...(options.declined ? { declined: true as const } : {}),
    });
    return unseal(id, secret, record, sealed);
  }

  /**
   * The call a handle stands for, without spending it: the same refusals as `take` (an expired record is removed
   * alike), the record left pending, so the handle still approves or declines once.
   */
  async peek(handle: string): Promise<PendingCall> {
    const { id, secret, record } = await this.open(handle);
    return unseal(id, secret, record, record.sealed);
  }

  /** The pending record a handle names, checked: its secret, its expiry; refusals as `take` documents. */
  private async open(
    handle: string,
  ): Promise<{ id: string; secret: string; record: StoredRecord; pendingFile: string }> {
    const parsed = HANDLE_PATTERN.exec(handle);
    if (!parsed) throw invalid("it is not an approval handle (apv_ followed by its id and secret)");
    const [, id, secret] = parsed as unknown as [string, string, string];
    const pendingFile = join(this.options.dir, `${id}.json`);
    const record = await readRecord(pendingFile);
    if (!record) {
      const used = await readRecord(join(this.options.dir, `${id}.used`));
      if (used && sameSecret(used.secret_check, secret)) {
        const how = used.declined ? "declined" : "used";
        throw new CairnError(
          ErrorCode.APPROVAL_USED,
          `approval ${id} was already ${how} by ${used.used_by ?? "an approver"} at ${used.used_at ?? "an earlier time"}: a handle approves or declines its call once; run the snippet again to ask anew`,
          { data: { approval_id: id, used_at: used.used_at, ...(used.declined ? { declined: true } : {}) } },
        );
      }
      throw invalid("this workspace holds no such handle (it was never given here, or it expired and was removed)");
    }
    if (!sameSecret(record.secret_check, secret)) throw invalid("the handle does not match the approval it names");
    if (Date.parse(record.expires_at) <= this.now()) {
      await rm(pendingFile, { force: true });
      throw new CairnError(
        ErrorCode.APPROVAL_EXPIRED,
        `approval ${id} for ${record.server}.${record.tool} expired at ${record.expires_at} (approvals.handle_ttl_s = ${this.options.ttlSeconds}): run the snippet again for a new handle, and approve it sooner`,
        { data: { approval_id: id, expires_at: record.expires_at } },
      );
    }
    return { id, secret, record, pendingFile };
  }

  /**
   * Counts unexpired pending records and removes expired ones (and tombstones a ttl past their expiry, so a used
   * handle is told "used" for as long as it could have been valid, and then "unknown").
   */
  async collect(): Promise<{ pending: number; expired: ExpiredCall[] }> {
    let names: string[];
    try {
      names = await readdir(this.options.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { pending: 0, expired: [] };
      throw error;
    }
    const now = this.now();
    let pending = 0;
    const expired: ExpiredCall[] = [];
    for (const name of names) {
      const pendingRecord = name.endsWith(".json");
      if (!pendingRecord && !name.endsWith(".used")) continue;
      const file = join(this.options.dir, name);
      const record = await readRecord(file);
      if (!record) continue;
      const expiry = Date.parse(record.expires_at);
      if (pendingRecord && expiry > now) pending++;
      else if (pendingRecord) {
        await rm(file, { force: true });
        expired.push({ id: record.id, server: record.server, tool: record.tool, digest: record.digest });
      } else if (expiry + this.options.ttlSeconds * 1000 <= now) await rm(file, { force: true });
    }
    return { pending, expired };
  }

  private async writeAtomic(name: string, record: StoredRecord): Promise<void> {
    const temp = join(this.options.dir, `.${name}.${randomBytes(6).toString("hex")}.tmp`);
    await writeFile(temp, JSON.stringify(record), { mode: 0o600, flush: true });
    await rename(temp, join(this.options.dir, name));
  }
}

/** The stored call decrypted under the handle's secret and checked against its digest (APPROVAL_INVALID if not). */
function unseal(id: string, secret: string, record: StoredRecord, sealed: StoredRecord["sealed"]): PendingCall {
  if (!sealed) throw invalid("the stored call holds no arguments");
  let args: Record<string, unknown>;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(secret), Buffer.from(sealed.iv, "base64"));
    decipher.setAAD(Buffer.from(boundText(id, record.digest, record.server, record.tool, record.expires_at)));
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
    const text = Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]);
    args = JSON.parse(text.toString("utf8")) as Record<string, unknown>;
  } catch {
    throw invalid("the stored call was altered (it no longer decrypts under the handle)");
  }
  if (callDigest(record.server, record.tool, args) !== record.digest) {
    throw invalid("the stored call no longer matches the digest it was approved under");
  }
  return {
    id,
    server: record.server,
    tool: record.tool,
    args,
    digest: record.digest,
    requested_by: record.requested_by,
    requested_at: record.requested_at,
    expires_at: record.expires_at,
  };
}

/** SHA-256 (hex) of the canonical JSON of `{server, tool, args}`. */
export function callDigest(server: string, tool: string, args: Record<string, unknown>): string {
  return sha256(canonicalJson({ server, tool, args }));
}

/**
 * JSON with object keys sorted at every level (RFC 8785's ordering for the values JSON.parse gives: strings, finite
 * numbers as JavaScript prints them, booleans, null, arrays and plain objects), so equal calls have equal digests.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(",")}}`;
}

/** What the ciphertext is bound to besides the arguments (AES-GCM additional data). */
function boundText(id: string, digest: string, server: string, tool: string, expiresAt: string): string {
  return JSON.stringify([id, digest, server, tool, expiresAt]);
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function keyOf(secret: string): Buffer {
  return createHash("sha256").update(`cairn approval v1\0${secret}`).digest();
}

function sameSecret(check: string, secret: string): boolean {
  const a = Buffer.from(check, "hex");
  const b = Buffer.from(sha256(secret), "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

async function readRecord(file: string): Promise<StoredRecord | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const record = JSON.parse(text) as StoredRecord;
    return record.v === RECORD_VERSION && typeof record.id === "string" ? record : undefined;
  } catch {
    return undefined;
  }
}

function invalid(why: string): CairnError {
  return new CairnError(
    ErrorCode.APPROVAL_INVALID,
    `approval refused: ${why}. Use the exact apv_ handle an APPROVAL_REQUIRED error gave, or run the snippet again for a new one`,
  );
}
