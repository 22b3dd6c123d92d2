// Backends answer in bounded time (decision 0254): an object store that accepts connections and never answers,
// answers a head and stalls its body, or trickles a body, gets BACKEND_UNAVAILABLE within `[workspace]
// backend_timeout_ms`, as a frozen PostgreSQL does; a save that times out leaves nothing half written, and the same
// store works once the server answers again. Deadlines are the code's own (a small configured one), never measured.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config/schema.js";
import { ErrorCode } from "../../src/errors.js";
import { backendChoice, openBlobStore, openCatalog } from "../../src/workspace/backends.js";
import { createS3BlobStore, type S3BlobStore } from "../../src/workspace/blobs/s3-blob-store.js";
import type { PgCatalog } from "../../src/workspace/catalog/pg-catalog.js";
import { createSqliteCatalog } from "../../src/workspace/catalog/sqlite-catalog.js";
import { Workspace } from "../../src/workspace/workspace.js";
import { freshS3 } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";
import { type HostileProxy, hostileProxy, type ProxyMode, silentServer } from "../helpers/hostile-s3.js";
import { ownPostgres } from "../helpers/restartable-services.js";

const MIB = 1024 * 1024;
/** Small enough to keep the file quick, large enough that a loaded machine still answers a forwarded request in it. */
// Long enough for the bucket check of a healthy start beside other test files; the stalls outlast it by far.
const DEADLINE_MS = 5000;
const root = mkdtempSync(join(tmpdir(), "cairn-deadline-"));
const closers: (() => Promise<unknown>)[] = [];
/** Processes a test froze (SIGSTOP): thawed after it, even when it failed. */
const frozen: number[] = [];
let n = 0;

afterEach(() => {
  for (const pid of frozen.splice(0)) process.kill(pid, "SIGCONT");
});

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  rmSync(root, { recursive: true, force: true });
});

const s3Options = (s3: ReturnType<typeof freshS3>, endpoint: string) => ({
  bucket: s3.bucket,
  prefix: s3.prefix,
  endpoint,
  region: s3.region,
  forcePathStyle: true,
  credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  cacheDir: join(root, `cache-${n++}`),
  multipartThresholdBytes: 5 * MIB,
  partBytes: 5 * MIB,
  timeoutMs: DEADLINE_MS,
});

/** A workspace (SQLite catalog) whose blobs go to the run's s3rver through a proxy the test turns hostile. */
async function behindProxy(): Promise<{ ws: Workspace; blobs: S3BlobStore; proxy: HostileProxy }> {
  const s3 = freshS3();
  const proxy = await hostileProxy(s3.endpoint);
  closers.push(() => proxy.close());
  const blobs = await createS3BlobStore(s3Options(s3, proxy.endpoint));
  const ws = new Workspace(await createSqliteCatalog(join(root, `catalog-${n++}.db`)), blobs, {
    chunkInBackground: false,
  });
  closers.push(() => ws.close());
  return { ws, blobs, proxy };
}

function expectTimedOut(error: { code: string; message: string }, doing: string): void {
  expect(error.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
  expect(error.message).toContain(doing);
  expect(error.message).toContain("within 5 s ([workspace] backend_timeout_ms");
  expect(error.message).toContain("cairn doctor");
}

const isUpload = (req: { method?: string | undefined }) => req.method === "PUT";
const isVerify = (req: { method?: string | undefined }) => req.method === "HEAD";
const isRead = (req: { method?: string | undefined; url?: string | undefined }) =>
  req.method === "GET" && !req.url?.includes("list-type");
const isList = (req: { url?: string | undefined }) => req.url?.includes("list-type") === true;

// Its cases wait on the deadline, not the processor, so they wait together.
describe.concurrent("an object store that stops answering", () => {
  it("refuses to open a store on an endpoint that accepts connections and never answers, within the deadline", async () => {
    const silent = await silentServer();
    closers.push(() => silent.close());
    // Broke: the SDK's requestTimeout only warned, so HeadBucket (and every later request) waited forever.
    const error = await caught(createS3BlobStore(s3Options(freshS3(), silent.endpoint)));
    expectTimedOut(error, "checking the bucket");
    expect(error.message).toContain(silent.endpoint);
    expect(silent.received).toBeGreaterThan(0);
  });

  const saves: {
    what: string;
    when: (req: { method?: string | undefined }) => boolean;
    bytes: number;
    doing: string;
  }[] = [
    { what: "a small blob's upload", when: isUpload, bytes: 1000, doing: "uploading blob" },
    { what: "a part of a multipart upload", when: isUpload, bytes: 6 * MIB, doing: "uploading part 1 of blob" },
    { what: "the check after a small upload", when: isVerify, bytes: 1000, doing: "looking up blob" },
    { what: "the check before a multipart upload", when: isVerify, bytes: 6 * MIB, doing: "looking up blob" },
  ];
  for (const { what, when, bytes, doing } of saves) {
    it(`answers a save whose ${what} never gets an answer with BACKEND_UNAVAILABLE, leaves no version without its blob, and saves once the server answers`, async () => {
      const { ws, blobs, proxy } = await behindProxy();
      const content = randomBytes(bytes).toString("base64").slice(0, bytes);
      // Content past a save's limit goes in by import, as a user's large file does.
      const file = join(root, `big-${n++}.txt`);
      writeFileSync(file, content);
      const save = () =>
        bytes > MIB ? ws.import({ name: "slow/a", path: file }) : ws.save({ name: "slow/a", content });
      proxy.set("silent", when);
      const error = await caught(save());
      expectTimedOut(error, doing);
      proxy.set("forward");
      // Either wholly there or absent: the catalog names a blob only after the bucket confirmed it.
      const found = await ws.lookup(["slow/a"]);
      if (found[0] !== undefined) {
        expect(await blobs.has(found[0].sha256)).toBe(true);
        expect(await ws.read("slow/a")).toBe(content);
      }
      expect(readdirSync(blobs.cache.tempDir)).toEqual([]);
      expect((await save()).version).toBe(1);
      expect(await ws.read("slow/a")).toBe(content);
    });
  }

  const reads: { mode: ProxyMode; doing: string }[] = [
    { mode: "silent", doing: "reading blob" },
    { mode: "stall-body", doing: "reading blob" },
    { mode: "trickle", doing: "reading blob" },
  ];
  for (const { mode, doing } of reads) {
    it(`answers reads of a blob the server serves "${mode}" with BACKEND_UNAVAILABLE, caches nothing, and reads once it answers`, async () => {
      const { ws, blobs, proxy } = await behindProxy();
      const content = `n\n${"12345\n".repeat(50)}`;
      await ws.save({ name: "slow/r.csv", content });
      const [record] = await ws.lookup(["slow/r.csv"]);
      const sha256 = record?.sha256 ?? "";
      await blobs.cache.drop(sha256);
      proxy.set(mode, isRead);
      // Broke: a GET whose body never came (or came a byte a second) held the read forever.
      expectTimedOut(await caught(ws.read("slow/r.csv")), doing);
      expectTimedOut(await caught(ws.locate(["slow/r.csv"])), doing);
      expectTimedOut(await caught(blobs.readRange(sha256, 2, 10, record?.bytes ?? 0)), doing);
      expect(existsSync(blobs.cache.pathOf(sha256))).toBe(false);
      expect(readdirSync(blobs.cache.tempDir)).toEqual([]);
      proxy.set("forward");
      expect(await ws.read("slow/r.csv")).toBe(content);
    });
  }

  it("answers a listing whose body stalls, or that never answers, with BACKEND_UNAVAILABLE, and lists once it answers", async () => {
    const { blobs, proxy } = await behindProxy();
    const { sha256 } = await blobs.put(Buffer.from("listed"));
    for (const mode of ["stall-body", "trickle", "silent"] as const) {
      proxy.set(mode, isList);
      expectTimedOut(await caught(blobs.list()), "listing blobs");
    }
    proxy.set("forward");
    expect(await blobs.list()).toEqual([sha256]);
  });
});

describe("one deadline for both backends", () => {
  it("reads [workspace] backend_timeout_ms (60 s by default) into both backends' options", () => {
    const parsed = (workspace: object) => backendChoice(ConfigSchema.parse({ workspace }).workspace);
    expect(parsed({}).backend_timeout_ms).toBe(60_000);
    expect(parsed({ backend_timeout_ms: 1500 }).backend_timeout_ms).toBe(1500);
    expect(() => ConfigSchema.parse({ workspace: { backend_timeout_ms: 0 } })).toThrow();
  });

  it("gives a frozen PostgreSQL and a silent object store the same configured deadline, and both answer afterwards", async () => {
    const pg = await ownPostgres();
    closers.push(async () => pg.remove());
    const s3 = freshS3();
    const proxy = await hostileProxy(s3.endpoint);
    closers.push(() => proxy.close());
    const dir = join(root, `both-${n++}`);
    const choice = {
      catalog: `${pg.url}?schema=deadline`,
      blobs: `s3://${s3.bucket}/${s3.prefix}`,
      endpoint: proxy.endpoint,
      region: s3.region,
      path_style: true,
      pool_size: 1,
      backend_timeout_ms: DEADLINE_MS,
    };
    // The wiring takes credentials from the SDK's chain, as a deployment does.
    const keys = { AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    for (const [key, value] of Object.entries(keys)) {
      const before = process.env[key];
      process.env[key] = value;
      closers.push(async () => {
        if (before === undefined) delete process.env[key];
        else process.env[key] = before;
      });
    }
    const catalog = (await openCatalog(dir, choice)) as PgCatalog;
    closers.push(() => catalog.close());
    const blobs = await openBlobStore(dir, choice);
    closers.push(() => blobs.close());
    const [{ pid }] = (await catalog.conn.rows<{ pid: number }>("SELECT pg_backend_pid() AS pid")) as [{ pid: number }];

    frozen.push(pg.postmasterPid(), pid);
    for (const p of frozen) process.kill(p, "SIGSTOP");
    const pgError = await caught(catalog.list({ limit: 1 }));
    for (const p of frozen.splice(0)) process.kill(p, "SIGCONT");
    proxy.set("silent");
    const s3Error = await caught(blobs.put(Buffer.from("never answered")));
    proxy.set("forward");

    for (const error of [pgError, s3Error]) {
      expect(error.code).toBe(ErrorCode.BACKEND_UNAVAILABLE);
      expect(error.message).toContain("within 5 s ([workspace] backend_timeout_ms");
      expect(error.data).toMatchObject({ timeoutMs: DEADLINE_MS });
    }
    expect(pgError.message).toContain("PostgreSQL server");
    expect(s3Error.message).toContain(`object store at ${proxy.endpoint}`);
    expect((await catalog.list({ limit: 1 })).records).toEqual([]);
    const { sha256 } = await blobs.put(Buffer.from("answered"));
    expect(Buffer.from(await blobs.read(sha256)).toString()).toBe("answered");
  });
});
