// S3BlobStore beyond the shared contract, on the run's S3-compatible server (s3rver): multipart uploads and what is
// visible while one runs or after one fails, the local cache's bound and LRU order, corrupt objects, retries and
// the errors a user sees when the server, the bucket or the credentials are wrong.

import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createServer, type IncomingMessage, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, describe, expect, it } from "vitest";
import { CairnError } from "../../src/errors.js";
import {
  createS3BlobStore,
  parseS3Target,
  type S3BlobStore,
  type S3BlobStoreOptions,
} from "../../src/workspace/blobs/s3-blob-store.js";
import { freshS3 } from "../helpers/backends.js";
import { caught } from "../helpers/caught.js";

const MIB = 1024 * 1024;
const root = mkdtempSync(join(tmpdir(), "cairn-s3-store-"));
const closers: (() => void | Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
  rmSync(root, { recursive: true, force: true });
});

let n = 0;
type Target = ReturnType<typeof freshS3>;

async function openStore(
  options: Partial<S3BlobStoreOptions> = {},
  s3: Target = freshS3(),
): Promise<{ store: S3BlobStore; s3: Target }> {
  const store = await createS3BlobStore({
    bucket: s3.bucket,
    prefix: s3.prefix,
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    cacheDir: join(root, `cache${n++}`),
    ...options,
  });
  closers.push(() => store.close());
  return { store, s3 };
}

/** A second client, behind the store's back. */
function outsider(s3: Target): S3Client {
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
  });
  closers.push(() => client.destroy());
  return client;
}

interface Seen {
  command: string;
  input: Record<string, unknown>;
  headers: Record<string, string>;
}

/** Records every request the store's client sends (after serialization, so with its headers). */
function watch(store: S3BlobStore): Seen[] {
  const seen: Seen[] = [];
  store.client.middlewareStack.add(
    (next, context) => async (args) => {
      const headers = (args.request as { headers?: Record<string, string> }).headers ?? {};
      seen.push({ command: context.commandName ?? "", input: args.input as Record<string, unknown>, headers });
      return next(args);
    },
    { step: "build", name: "watchRequests" },
  );
  return seen;
}

/** Runs `hook` before each request of the store's client is sent (it may wait or throw). */
function intercept(store: S3BlobStore, hook: (command: string, input: Record<string, unknown>) => Promise<void>): void {
  store.client.middlewareStack.add(
    (next, context) => async (args) => {
      await hook(context.commandName ?? "", args.input as Record<string, unknown>);
      return next(args);
    },
    { step: "initialize", name: "interceptRequests" },
  );
}

const count = (seen: Seen[], command: string) => seen.filter((s) => s.command === command).length;
const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const b64 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("base64");

function chunked(bytes: Buffer, size = MIB): Readable {
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) parts.push(bytes.subarray(at, at + size));
  return Readable.from(parts);
}

async function keysUnder(client: S3Client, s3: Target): Promise<string[]> {
  const page = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${s3.prefix}/` }));
  return (page.Contents ?? []).map((c) => c.Key ?? "");
}

async function objectBytes(client: S3Client, s3: Target, key: string): Promise<Buffer> {
  const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return Buffer.from((await object.Body?.transformToByteArray()) ?? []);
}

async function drain(iterable: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of iterable) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Whatever `promise` rejects with. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection, got success");
}

async function code(promise: Promise<unknown>): Promise<string> {
  const error = await caught(promise);
  return error instanceof CairnError ? error.code : `not a CairnError: ${String(error)}`;
}

/**
 * An HTTP proxy in front of the S3 server whose `decide` answers each request: forward it, answer 503 SlowDown,
 * or forward the response's head and first chunk and then cut the connection.
 */
async function proxy(
  target: string,
  decide: (req: IncomingMessage) => "forward" | "slow-down" | "cut",
): Promise<{ endpoint: string }> {
  const server: Server = createServer((req, res) => {
    const action = decide(req);
    if (action === "slow-down") {
      req.resume();
      res.writeHead(503, { "content-type": "application/xml" });
      res.end("<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>");
      return;
    }
    const upstream = request(new URL(req.url ?? "/", target), { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      if (action === "cut") {
        up.once("data", (chunk: Buffer) => {
          res.write(chunk.subarray(0, Math.min(chunk.length, 1000)));
          res.socket?.destroy();
          up.destroy();
        });
      } else {
        up.pipe(res);
      }
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.on("connection", (socket) => closers.push(() => void socket.destroy()));
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe("S3BlobStore uploads", () => {
  it("uploads a blob above the threshold in parts, each with its SHA-256, and reads it back verified", async () => {
    const { store, s3 } = await openStore({ multipartThresholdBytes: 5 * MIB, partBytes: 5 * MIB });
    const seen = watch(store);
    const content = randomBytes(12 * MIB);
    const info = await store.put(chunked(content));
    expect(info).toEqual({ sha256: sha(content), bytes: content.length });
    const parts = seen.filter((s) => s.command === "UploadPartCommand");
    expect(parts.map((p) => p.input.PartNumber)).toEqual([1, 2, 3]);
    const slices = [content.subarray(0, 5 * MIB), content.subarray(5 * MIB, 10 * MIB), content.subarray(10 * MIB)];
    expect(parts.map((p) => p.headers["x-amz-checksum-sha256"])).toEqual(slices.map(b64));
    expect(count(seen, "CreateMultipartUploadCommand")).toBe(1);
    expect(count(seen, "CompleteMultipartUploadCommand")).toBe(1);
    expect(count(seen, "PutObjectCommand")).toBe(0);
    // A second store with an empty cache reads it from the bucket.
    const { store: other } = await openStore({}, s3);
    expect(sha(await other.read(info.sha256, info.bytes))).toBe(info.sha256);
    const head = await outsider(s3).send(new HeadObjectCommand({ Bucket: s3.bucket, Key: store.keyOf(info.sha256) }));
    expect(head.Metadata?.["cairn-sha256"]).toBe(info.sha256);
  });

  it("uploads a small blob whole with its SHA-256, and without it when checksums are off", async () => {
    const { store } = await openStore();
    const seen = watch(store);
    const content = Buffer.from("small enough for one request");
    await store.put(content);
    const put = seen.filter((s) => s.command === "PutObjectCommand");
    expect(put).toHaveLength(1);
    expect(put[0]?.headers["x-amz-checksum-sha256"]).toBe(b64(content));
    const { store: plain } = await openStore({ checksums: false });
    const plainSeen = watch(plain);
    await plain.put(content);
    const plainPut = plainSeen.filter((s) => s.command === "PutObjectCommand");
    expect(plainPut).toHaveLength(1);
    expect(Object.keys(plainPut[0]?.headers ?? {}).filter((h) => h.startsWith("x-amz-checksum"))).toEqual([]);
  });

  it("shows nothing under the key while a multipart upload is in progress", async () => {
    const { store, s3 } = await openStore({ multipartThresholdBytes: 5 * MIB, partBytes: 5 * MIB });
    const content = randomBytes(12 * MIB);
    let reached!: () => void;
    const atPartTwo = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    intercept(store, async (command, input) => {
      if (command === "UploadPartCommand" && input.PartNumber === 2) {
        reached();
        await gate;
      }
    });
    const putting = store.put(content);
    await atPartTwo;
    const client = outsider(s3);
    expect(
      await rejection(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: store.keyOf(sha(content)) }))),
    ).toMatchObject({ name: "NotFound" });
    expect(await store.has(sha(content))).toBe(false);
    expect(await store.list()).toEqual([]);
    release();
    await putting;
    expect(await store.has(sha(content))).toBe(true);
  });

  it("aborts a multipart upload whose part fails and publishes nothing", async () => {
    const { store, s3 } = await openStore({ multipartThresholdBytes: 5 * MIB, partBytes: 5 * MIB });
    const seen = watch(store);
    intercept(store, async (command, input) => {
      if (command === "UploadPartCommand" && input.PartNumber === 2) throw new Error("part 2 refused");
    });
    const content = randomBytes(12 * MIB);
    expect(String(await rejection(store.put(chunked(content))))).toContain("part 2 refused");
    expect(count(seen, "AbortMultipartUploadCommand")).toBe(1);
    expect(count(seen, "CompleteMultipartUploadCommand")).toBe(0);
    expect(await keysUnder(outsider(s3), s3)).toEqual([]);
    expect(readdirSync(store.cache.tempDir)).toEqual([]);
  });

  it("aborts and publishes nothing when the staged file changes before it is uploaded", async () => {
    const { store, s3 } = await openStore({ multipartThresholdBytes: 5 * MIB, partBytes: 5 * MIB });
    const seen = watch(store);
    const staged = await store.stage(chunked(randomBytes(12 * MIB)));
    const [temp] = readdirSync(store.cache.tempDir);
    truncateSync(join(store.cache.tempDir, temp ?? ""), 7 * MIB);
    const error = await caught(staged.commit());
    expect(error.code).toBe("CORRUPT");
    expect(error.message).toContain("changed before they were uploaded (nothing was published)");
    await staged.discard();
    expect(count(seen, "AbortMultipartUploadCommand")).toBe(1);
    expect(await keysUnder(outsider(s3), s3)).toEqual([]);
    expect(readdirSync(store.cache.tempDir)).toEqual([]);
  });

  it("leaves nothing in the bucket and no temp file when the source fails midway", async () => {
    const { store, s3 } = await openStore({ multipartThresholdBytes: 5 * MIB, partBytes: 5 * MIB });
    async function* source() {
      yield randomBytes(3 * MIB);
      yield randomBytes(3 * MIB);
      throw new Error("source broke");
    }
    expect(String(await rejection(store.put(source())))).toContain("source broke");
    expect(await keysUnder(outsider(s3), s3)).toEqual([]);
    expect(await store.list()).toEqual([]);
    expect(readdirSync(store.cache.tempDir)).toEqual([]);
  });

  it("uploads a multipart blob once, sends a small one each time, and repairs an object another writer replaced", async () => {
    const { store, s3 } = await openStore({ multipartThresholdBytes: 5 * MIB, partBytes: 5 * MIB });
    const seen = watch(store);
    const large = randomBytes(6 * MIB);
    await store.put(chunked(large));
    await store.put(chunked(large));
    expect(count(seen, "CreateMultipartUploadCommand")).toBe(1);
    // A small blob costs one PUT whether or not the bucket has it: asking first would cost as much.
    const content = Buffer.from("stored once");
    const { sha256 } = await store.put(content);
    await store.put(Readable.from([content]));
    expect(count(seen, "PutObjectCommand")).toBe(2);
    // Same size, other bytes, no metadata: the next put of the blob puts its own bytes back.
    const client = outsider(s3);
    await client.send(
      new PutObjectCommand({ Bucket: s3.bucket, Key: store.keyOf(sha256), Body: Buffer.from("STORED ONCE") }),
    );
    await store.put(content);
    expect((await objectBytes(client, s3, store.keyOf(sha256))).toString()).toBe("stored once");
  });

  it("stores one object for parallel puts of the same content", async () => {
    const { store, s3 } = await openStore({ multipartThresholdBytes: 5 * MIB, partBytes: 5 * MIB });
    const large = randomBytes(6 * MIB);
    const small = Buffer.from("parallel");
    const results = await Promise.all([
      ...Array.from({ length: 4 }, () => store.put(chunked(large))),
      ...Array.from({ length: 4 }, () => store.put(small)),
    ]);
    expect(new Set(results.map((r) => r.sha256))).toEqual(new Set([sha(large), sha(small)]));
    expect((await store.list()).sort()).toEqual([sha(large), sha(small)].sort());
    expect((await keysUnder(outsider(s3), s3)).length).toBe(2);
    const { store: other } = await openStore({}, s3);
    expect(Buffer.from(await other.read(sha(large), large.length)).equals(large)).toBe(true);
    expect(readdirSync(store.cache.tempDir)).toEqual([]);
  });

  it("lists only the blobs under its own prefix", async () => {
    const s3 = freshS3();
    const { store } = await openStore({}, s3);
    const { store: neighbour } = await openStore({}, { ...s3, prefix: `${s3.prefix}-next` });
    const mine = await store.put(Buffer.from("mine"));
    await neighbour.put(Buffer.from("theirs"));
    const client = outsider(s3);
    for (const key of [`${s3.prefix}/sha256/zz/not-a-blob`, `${s3.prefix}/notes.txt`]) {
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: "x" }));
    }
    expect(await store.list()).toEqual([mine.sha256]);
  });
});

describe("S3BlobStore reads and its cache", () => {
  it("detects a corrupt object on every read and never caches it", async () => {
    const { store, s3 } = await openStore();
    const content = Buffer.from("original content");
    const { sha256 } = await store.put(content);
    await outsider(s3).send(
      new PutObjectCommand({ Bucket: s3.bucket, Key: store.keyOf(sha256), Body: Buffer.from("tampered content") }),
    );
    expect(await code(store.read(sha256, content.length))).toBe("CORRUPT");
    expect(await code(store.localPath(sha256, content.length))).toBe("CORRUPT");
    expect(await code(drain(store.open(sha256, content.length)))).toBe("CORRUPT");
    expect(existsSync(store.cache.pathOf(sha256))).toBe(false);
    expect(readdirSync(store.cache.tempDir)).toEqual([]);
  });

  it("replaces a damaged cached copy with the bucket's bytes", async () => {
    const { store } = await openStore();
    const content = Buffer.from("kept in the bucket");
    const { sha256 } = await store.put(Readable.from([content]));
    const cached = store.cache.pathOf(sha256);
    expect(readFileSync(cached)).toEqual(content);
    writeFileSync(cached, Buffer.from("KEPT IN THE BUCKET"));
    expect(Buffer.from(await store.read(sha256, content.length))).toEqual(content);
    expect(readFileSync(cached)).toEqual(content);
    // A stream has handed its bytes out before it can know: it fails at its end and drops the copy.
    writeFileSync(cached, Buffer.from("KEPT IN THE BUCKET"));
    const error = await caught(drain(store.open(sha256, content.length)));
    expect(error).toMatchObject({ code: "CORRUPT" });
    expect(String((error as Error).message)).toContain("cached copy");
    expect(existsSync(cached)).toBe(false);
    expect(await drain(store.open(sha256, content.length))).toEqual(content);
    expect(readFileSync(cached)).toEqual(content);
  });

  it("fills the cache from verified reads and serves later reads from it", async () => {
    const { store, s3 } = await openStore();
    const content = Buffer.from("a,b\n1,2\n");
    const { sha256 } = await store.put(content);
    expect(existsSync(store.cache.pathOf(sha256))).toBe(false);
    expect(Buffer.from(await store.read(sha256, 8))).toEqual(content);
    expect(readFileSync(store.cache.pathOf(sha256))).toEqual(content);
    const seen = watch(store);
    expect(Buffer.from(await store.readRange(sha256, 2, 3, 8)).toString()).toBe("b\n1");
    expect(readFileSync(await store.localPath(sha256, 8))).toEqual(content);
    expect(seen.filter((s) => s.command === "GetObjectCommand")).toEqual([]);
    // has and size always ask the bucket.
    await outsider(s3).send(new PutObjectCommand({ Bucket: s3.bucket, Key: store.keyOf(sha256), Body: "x" }));
    expect(await store.size(sha256)).toBe(1);
  });

  it("reads a range from the bucket with one ranged request when the blob is not cached", async () => {
    const { store } = await openStore();
    const content = randomBytes(MIB);
    const { sha256 } = await store.put(content);
    const seen = watch(store);
    expect(Buffer.from(await store.readRange(sha256, 1000, 50, MIB)).equals(content.subarray(1000, 1050))).toBe(true);
    const gets = seen.filter((s) => s.command === "GetObjectCommand");
    expect(gets.map((g) => g.input.Range)).toEqual(["bytes=1000-1049"]);
    expect(existsSync(store.cache.pathOf(sha256))).toBe(false);
  });

  it("bounds the cache by bytes and evicts the least recently used file first", async () => {
    const { store } = await openStore({ cacheMaxBytes: 3000, leaseMs: 0 });
    const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map((i) => store.put(Buffer.alloc(1000, i))));
    for (const blob of [a, b, c]) await store.localPath(blob?.sha256 ?? "", 1000);
    await store.read(a?.sha256 ?? "", 1000);
    await store.localPath(d?.sha256 ?? "", 1000);
    const present = [a, b, c, d].map((blob) => existsSync(store.cache.pathOf(blob?.sha256 ?? "")));
    expect(present).toEqual([true, false, true, true]);
    expect(store.cache.bytes).toBe(3000);
  });

  it("never evicts a file handed out within its lease, even past the bound", async () => {
    const { store } = await openStore({ cacheMaxBytes: 2500, leaseMs: 60_000 });
    const blobs = await Promise.all([1, 2, 3].map((i) => store.put(Buffer.alloc(1000, i))));
    const paths = await Promise.all(blobs.map((blob) => store.localPath(blob.sha256, 1000)));
    const big = await store.put(Buffer.alloc(5000, 9));
    const bigPath = await store.localPath(big.sha256, 5000);
    expect(readFileSync(bigPath)).toEqual(Buffer.alloc(5000, 9));
    expect(paths.map((path) => existsSync(path))).toEqual([true, true, true]);
    expect(store.cache.bytes).toBe(8000);
  });

  it("never evicts a file another process sharing the cache directory handed out within its lease", async () => {
    const cacheDir = join(root, `shared${n++}`);
    const { store: first, s3 } = await openStore({ cacheDir, leaseMs: 60_000 });
    const [a, b, c] = await Promise.all([1, 2, 3].map((i) => first.put(Buffer.alloc(1000, i))));
    const handedOut = await first.localPath(a?.sha256 ?? "", 1000);
    // The second process knows the file from the directory only; the lease is the file's mtime.
    const { store: second } = await openStore({ cacheDir, leaseMs: 60_000, cacheMaxBytes: 1500 }, s3);
    await second.read(b?.sha256 ?? "", 1000);
    await second.read(c?.sha256 ?? "", 1000);
    expect(existsSync(handedOut)).toBe(true);
    expect(existsSync(second.cache.pathOf(b?.sha256 ?? ""))).toBe(false);
    expect(existsSync(second.cache.pathOf(c?.sha256 ?? ""))).toBe(true);
  });

  it("serves a blob larger than the whole cache, evicting the others", async () => {
    const { store } = await openStore({ cacheMaxBytes: 2500, leaseMs: 0 });
    const small = await Promise.all([1, 2].map((i) => store.put(Buffer.alloc(1000, i))));
    const paths = await Promise.all(small.map((blob) => store.localPath(blob.sha256, 1000)));
    const big = await store.put(Buffer.alloc(5000, 9));
    expect(readFileSync(await store.localPath(big.sha256, 5000))).toEqual(Buffer.alloc(5000, 9));
    expect(paths.map((path) => existsSync(path))).toEqual([false, false]);
    // The next file added evicts it in turn, its lease being over.
    await store.localPath(small[0]?.sha256 ?? "", 1000);
    expect(existsSync(store.cache.pathOf(big.sha256))).toBe(false);
  });

  it("rebuilds its LRU order from the cache directory when reopened", async () => {
    const cacheDir = join(root, `shared${n++}`);
    const { store, s3 } = await openStore({ cacheDir, leaseMs: 0 });
    const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map((i) => store.put(Buffer.alloc(1000, i))));
    for (const blob of [a, b, c]) await store.localPath(blob?.sha256 ?? "", 1000);
    const used = (blob: typeof a, seconds: number) =>
      utimesSync(store.cache.pathOf(blob?.sha256 ?? ""), new Date(seconds * 1000), new Date(0));
    used(a, 3000);
    used(b, 1000);
    used(c, 2000);
    const { store: reopened } = await openStore({ cacheDir, leaseMs: 0, cacheMaxBytes: 3000 }, s3);
    expect(reopened.cache.bytes).toBe(3000);
    await reopened.localPath(d?.sha256 ?? "", 1000);
    const present = [a, b, c, d].map((blob) => existsSync(store.cache.pathOf(blob?.sha256 ?? "")));
    expect(present).toEqual([true, false, true, true]);
  });

  it("deletes the object and its cached copy", async () => {
    const { store } = await openStore();
    const { sha256 } = await store.put(Readable.from([Buffer.from("gone soon")]));
    expect(existsSync(store.cache.pathOf(sha256))).toBe(true);
    expect(await store.delete(sha256)).toBe(true);
    expect(existsSync(store.cache.pathOf(sha256))).toBe(false);
    expect(await code(store.read(sha256))).toBe("NOT_FOUND");
  });
});

describe("S3BlobStore failures", () => {
  it("retries a server that answers 503 and succeeds", async () => {
    const s3 = freshS3();
    let refusals = 2;
    const { endpoint } = await proxy(s3.endpoint, (req) =>
      req.method === "PUT" && refusals-- > 0 ? "slow-down" : "forward",
    );
    const { store } = await openStore({ endpoint }, s3);
    const content = Buffer.from("after two refusals");
    const { sha256 } = await store.put(content);
    expect(refusals).toBeLessThan(0);
    expect(Buffer.from(await store.read(sha256))).toEqual(content);
  });

  it("reports BACKEND_UNAVAILABLE once the retries of a failing server run out", async () => {
    const s3 = freshS3();
    const { endpoint } = await proxy(s3.endpoint, (req) => (req.method === "PUT" ? "slow-down" : "forward"));
    const { store } = await openStore({ endpoint, maxAttempts: 2 }, s3);
    const error = await caught(store.put(Buffer.from("never stored")));
    expect(error).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect((error as Error).message).toContain("SlowDown, HTTP 503, after 2 attempts");
  });

  it("reports BACKEND_UNAVAILABLE when the connection breaks mid-download, caching nothing", async () => {
    const s3 = freshS3();
    const { store: direct } = await openStore({}, s3);
    const content = randomBytes(2 * MIB);
    const { sha256 } = await direct.put(content);
    const { endpoint } = await proxy(s3.endpoint, (req) => (req.method === "GET" ? "cut" : "forward"));
    const { store } = await openStore({ endpoint }, s3);
    expect(await code(store.localPath(sha256, content.length))).toBe("BACKEND_UNAVAILABLE");
    expect(await code(store.read(sha256, content.length))).toBe("BACKEND_UNAVAILABLE");
    expect(existsSync(store.cache.pathOf(sha256))).toBe(false);
    expect(readdirSync(store.cache.tempDir)).toEqual([]);
  });

  it("reports BACKEND_UNAVAILABLE, naming the endpoint, when nothing listens there", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await caught(openStore({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 2 }));
    expect(error).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect((error as Error).message).toContain(`the object store at http://127.0.0.1:${port} did not answer`);
    expect((error as Error).message).toContain("ECONNREFUSED, after 2 attempts");
  });

  it("reports credentials the server refuses as BACKEND_UNAVAILABLE, naming the bucket and never the secret", async () => {
    // s3rver checks the access key id but not SigV4 signatures: a wrong secret alone is accepted there.
    const s3 = freshS3();
    const secret = "do-not-print-this-secret-42";
    const error = await caught(
      openStore({ credentials: { accessKeyId: "NOT-A-KEY", secretAccessKey: secret, sessionToken: secret } }, s3),
    );
    expect(error).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    const message = (error as Error).message;
    expect(message).toContain(`bucket "${s3.bucket}"`);
    expect(message).toContain("AWS_ACCESS_KEY_ID");
    expect(JSON.stringify((error as CairnError).toJSON())).not.toContain(secret);
    expect(message).not.toContain(secret);
  });

  it("reports a missing bucket as BACKEND_UNAVAILABLE with the next step", async () => {
    const s3 = freshS3();
    const error = await caught(openStore({ bucket: "no-such-bucket" }, s3));
    expect(error).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect((error as Error).message).toContain('bucket "no-such-bucket" does not exist');
  });

  it("refuses parts smaller than S3's minimum", async () => {
    expect(await code(openStore({ partBytes: MIB }))).toBe("CONFIG_INVALID");
  });
});

describe("parseS3Target", () => {
  it("reads the bucket and the key prefix", () => {
    expect(parseS3Target("s3://cairn-team/workspaces/main")).toEqual({
      bucket: "cairn-team",
      prefix: "workspaces/main",
    });
    expect(parseS3Target("s3://cairn-team/blobs/")).toEqual({ bucket: "cairn-team", prefix: "blobs" });
    expect(parseS3Target("s3://cairn-team")).toEqual({ bucket: "cairn-team", prefix: "" });
  });

  it.each([
    "http://cairn-team/blobs",
    "s3://",
    "s3:/cairn-team",
    "s3://Cairn_Team/blobs",
    "s3://ab/blobs",
    "s3://cairn-team/a//b",
    "s3://cairn-team/a/../b",
    "s3://cairn-team/blobs?versionId=1",
    "cairn-team/blobs",
  ])("refuses %s as CONFIG_INVALID", (target) => {
    expect(() => parseS3Target(target)).toThrow(expect.objectContaining({ code: "CONFIG_INVALID" }));
  });

  it("never repeats credentials written into the target", () => {
    try {
      parseS3Target("s3://AKIAEXAMPLE:hunter2@cairn-team/blobs");
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ code: "CONFIG_INVALID" });
      expect((error as Error).message).not.toContain("hunter2");
    }
  });
});
