// Where OAuth state of an upstream lives between runs: one private JSON file per server and URL (0600, in a 0700
// directory, replaced atomically), or memory for a one-off `cairn upstream check`. No OS keychain: see decision 0241.
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { OAuthClientInformationMixed, OAuthDiscoveryState, OAuthTokens } from "@modelcontextprotocol/client";
import { CairnError, ErrorCode } from "../errors.js";
import { registerCredential } from "../log.js";

/** What Cairn keeps for one OAuth upstream. Tokens and client secrets never leave this record but to the server. */
export interface OAuthRecord {
  /** The server's URL the record belongs to: a record is never used for another URL. */
  url: string;
  /** The loopback redirect URI the client was registered with at the last sign-in. */
  redirect_url?: string;
  client_information?: OAuthClientInformationMixed;
  /** As the SDK saved them (with `issuer`), unchanged. */
  tokens?: OAuthTokens;
  /** Epoch ms when the access token expires, from `expires_in` at the time it was saved; absent: not said. */
  expires_at?: number;
  discovery?: OAuthDiscoveryState;
  /** Epoch ms of the last sign-in. */
  signed_in_at?: number;
}

/** One server's OAuth record. `read` never throws for a missing record; `write` is all or nothing. */
export interface OAuthStore {
  read(): OAuthRecord | undefined;
  /** Replaces the record with `update(current)`; the record as written is returned. */
  write(update: (current: OAuthRecord | undefined) => OAuthRecord): OAuthRecord;
  /** Removes the record; true when there was one. */
  remove(): boolean;
  /** Where the record lives, for messages ("memory" for a one-off check). */
  readonly location: string;
  /**
   * Runs `work` while no other process holds this record's lock (a refresh: read, send, write as one step), within
   * LOCK_WAIT_MS; past that, or when no lock can be made, it runs anyway, as it would without one.
   */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
}

/** How long a refresh waits for another process's refresh of the same record before going ahead. */
export const LOCK_WAIT_MS = 15_000;
/** A lock older than this was left by a process that died (a refresh takes seconds). */
const LOCK_STALE_MS = 60_000;

/** The directory of the token files: `$CAIRN_OAUTH_DIR`, else `~/.cairn/oauth`. */
export function oauthDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.CAIRN_OAUTH_DIR || join(env.HOME || homedir(), ".cairn", "oauth"));
}

/** The file of `server` at `url`: the name for people, a digest of the URL so two configs never share a file. */
export function oauthFileName(server: string, url: string): string {
  const digest = createHash("sha256").update(url).digest("hex").slice(0, 16);
  return `${server}-${digest}.json`;
}

/** Registers every secret a record holds, so that no log line or message can carry one. */
function registerRecordSecrets(record: OAuthRecord | undefined): void {
  if (!record) return;
  for (const value of [
    record.tokens?.access_token,
    record.tokens?.refresh_token,
    record.tokens?.id_token,
    record.client_information?.client_secret,
  ]) {
    if (typeof value === "string") registerCredential(value);
  }
}

/**
 * A record in a file of its own under `dir`, mode 0600 in a directory of mode 0700 (both set again if found wider).
 * A write goes to a temp file in the same directory, is synced, then renamed over the record: a reader sees the old
 * record or the new one, never half of one. A record of another URL reads as none.
 */
export class FileOAuthStore implements OAuthStore {
  readonly location: string;

  constructor(
    private readonly dir: string,
    private readonly server: string,
    private readonly url: string,
  ) {
    this.location = join(dir, oauthFileName(server, url));
  }

  read(): OAuthRecord | undefined {
    let text: string;
    try {
      const mode = statSync(this.location).mode;
      if ((mode & 0o077) !== 0) chmodSync(this.location, 0o600);
      text = readFileSync(this.location, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw this.failure("read", error);
    }
    let record: OAuthRecord;
    try {
      record = JSON.parse(text) as OAuthRecord;
    } catch {
      throw new CairnError(
        ErrorCode.AUTH_REQUIRED,
        `the OAuth record of server "${this.server}" (${this.location}) is not valid JSON: run cairn auth login ${this.server} to replace it`,
        { data: { server: this.server } },
      );
    }
    if (record === null || typeof record !== "object" || record.url !== this.url) return undefined;
    registerRecordSecrets(record);
    return record;
  }

  write(update: (current: OAuthRecord | undefined) => OAuthRecord): OAuthRecord {
    const record = { ...update(this.read()), url: this.url };
    registerRecordSecrets(record);
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      if ((statSync(this.dir).mode & 0o077) !== 0) chmodSync(this.dir, 0o700);
    } catch (error) {
      throw this.failure("create the directory of", error);
    }
    const temp = join(this.dir, `.${oauthFileName(this.server, this.url)}.${randomBytes(6).toString("hex")}.tmp`);
    try {
      // "wx" with 0600: the file is private from its first byte, and never an existing file (or link) reused.
      const fd = openSync(temp, "wx", 0o600);
      try {
        writeSync(fd, `${JSON.stringify(record, null, 2)}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, this.location);
      syncDirectory(this.dir);
    } catch (error) {
      rmSync(temp, { force: true });
      throw this.failure("write", error);
    }
    return record;
  }

  async exclusive<T>(work: () => Promise<T>): Promise<T> {
    const lock = `${this.location}.lock`;
    const deadline = Date.now() + LOCK_WAIT_MS;
    let held = false;
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    } catch {
      return work();
    }
    while (!held) {
      try {
        closeSync(openSync(lock, "wx", 0o600));
        held = true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST" || Date.now() > deadline) break;
        try {
          if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) rmSync(lock, { force: true });
        } catch {
          // Released meanwhile: try again at once.
          continue;
        }
        await new Promise((resolve) => setTimeout(resolve, 25 + Math.random() * 25));
      }
    }
    try {
      return await work();
    } finally {
      if (held) rmSync(lock, { force: true });
    }
  }

  remove(): boolean {
    try {
      rmSync(this.location);
      syncDirectory(this.dir);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw this.failure("remove", error);
    }
  }

  private failure(what: string, error: unknown): CairnError {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    return new CairnError(
      ErrorCode.AUTH_REQUIRED,
      `cannot ${what} the OAuth record of server "${this.server}" at ${this.location} (${reason}): check that directory's owner and permissions, or set CAIRN_OAUTH_DIR`,
      { data: { server: this.server } },
    );
  }
}

/** A record held in memory only: `cairn upstream check URL` signs in for that run and forgets. */
export class MemoryOAuthStore implements OAuthStore {
  readonly location = "memory";
  private record: OAuthRecord | undefined;

  constructor(private readonly url: string) {}

  read(): OAuthRecord | undefined {
    return this.record;
  }

  write(update: (current: OAuthRecord | undefined) => OAuthRecord): OAuthRecord {
    this.record = { ...update(this.record), url: this.url };
    registerRecordSecrets(this.record);
    return this.record;
  }

  /** One process: concurrent refreshes are already shared by the fetch (oauth-fetch.ts). */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    return work();
  }

  remove(): boolean {
    const had = this.record !== undefined;
    this.record = undefined;
    return had;
  }
}

/** Stray temp files of writes that died before their rename (a crash): removed, since they may hold tokens. */
export function removeStrayTempFiles(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) if (name.startsWith(".") && name.endsWith(".tmp")) rmSync(join(dir, name), { force: true });
}

function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Some file systems refuse fsync on a directory; the rename itself is still atomic.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
