// `cairn workspace copy` through the built binary: a workspace saved with the CLI is copied to a directory and, by a
// cairn.toml, to PostgreSQL, then found and written there by the CLI; refusals exit non-zero with their codes, the
// password never printed, and a failed copy to a new directory leaves no directory behind.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freshPostgresUrl } from "../helpers/backends.js";
import { MAIN } from "../helpers/mcp-client.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-copy-e2e-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The built CLI; with `home` false, no $CAIRN_HOME, so a --config file's [workspace] path applies. */
function cairn(args: string[], home = true) {
  const { CAIRN_HOME: _, ...env } = process.env;
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: "utf8",
    cwd: dir,
    env: { ...env, CAIRN_LOG: "error", ...(home ? { CAIRN_HOME: join(dir, "unused") } : {}) },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: parseOr(r.stdout) };
}

// biome-ignore lint/suspicious/noExplicitAny: replies are free-form JSON in tests
function parseOr(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

describe("cairn workspace copy", () => {
  const source = join(dir, "source");
  const save = (...args: string[]) => {
    const r = cairn(["--workspace", source, "save", ...args, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    return r.json;
  };

  it("copies to a directory and to PostgreSQL by a cairn.toml, where the CLI finds and writes it", () => {
    const first = save("notes/ledger", "--content", "the ledger moves to PostgreSQL this quarter");
    save("notes/ledger", "--content", "the ledger moved; the bucket is next", "--expected-version", "1");
    save("data/delays.csv", "--content", "origin,delay\nSFO,12\nSEA,40\n");

    const copied = cairn(["--workspace", source, "workspace", "copy", "--to", join(dir, "copy"), "--json"]);
    expect(copied.code, copied.stderr).toBe(0);
    expect(copied.json).toMatchObject({ versions: 3, names: 2, blobs: 3, verified: true });
    expect(copied.json.destination.catalog).toBe(join(dir, "copy", "catalog.db"));
    const found = cairn(["--workspace", join(dir, "copy"), "find", "bucket", "--json"]);
    expect(found.json.results.map((r: { name: string }) => r.name)).toEqual(["notes/ledger"]);

    // A password in the URL (the test server trusts loopback, so it is accepted and unused) is never printed.
    const url = new URL(freshPostgresUrl());
    url.password = "s3cret-pw";
    const toml = join(dir, "team.toml");
    writeFileSync(toml, `[workspace]\npath = "${join(dir, "team")}"\ncatalog = "${url.toString()}"\n`);
    const shared = cairn(["--workspace", source, "workspace", "copy", "--to", toml]);
    expect(shared.code, shared.stderr).toBe(0);
    expect(shared.stdout).toMatch(/^copied 3 versions of 2 names and 3 blobs of \d+ bytes \(3 written\)/);
    expect(shared.stdout).toContain("***");
    expect(shared.stdout + shared.stderr).not.toContain("s3cret-pw");

    // Found at PostgreSQL by a word of the body, through the search index the copy rebuilt there.
    const there = cairn(["--config", toml, "find", "bucket", "--json"], false);
    expect(there.code, there.stderr).toBe(0);
    expect(there.json.results.map((r: { name: string }) => r.name)).toEqual(["notes/ledger"]);
    const current = cairn(["--config", toml, "inspect", "notes/ledger", "--json"], false);
    expect(current.json).toMatchObject({ name: "notes/ledger", version: 2 });
    const v3 = cairn(
      ["--config", toml, "save", "notes/ledger", "--content", "v3", "--expected-version", "2", "--json"],
      false,
    );
    expect(v3.code, v3.stderr).toBe(0);
    expect(v3.json.version).toBe(3);
    const original = cairn(["--config", toml, "inspect", first.artifact_id, "--json"], false);
    expect(original.json).toMatchObject({ artifact_id: first.artifact_id, version: 1 });

    const again = cairn(["--workspace", source, "workspace", "copy", "--to", toml, "--json"]);
    expect(again.code).toBe(1);
    expect(again.json.error.code).toBe("ALREADY_EXISTS");
    expect(again.stdout).not.toContain("s3cret-pw");
  });

  it("refuses the source itself and a missing source, with their codes", () => {
    save("notes/solo", "--content", "one note");
    const itself = cairn(["--workspace", source, "workspace", "copy", "--to", source]);
    expect(itself.code).toBe(2);
    expect(itself.stderr).toContain("INVALID_ARGUMENT");
    const missing = cairn(["--workspace", join(dir, "nowhere"), "workspace", "copy", "--to", join(dir, "x"), "--json"]);
    expect(missing.json.error.code).toBe("NOT_FOUND");
    expect(existsSync(join(dir, "nowhere"))).toBe(false);
    expect(existsSync(join(dir, "x"))).toBe(false);
    writeFileSync(join(dir, "stray-file"), "not a workspace");
    const notDir = cairn(["--workspace", source, "workspace", "copy", "--to", join(dir, "stray-file"), "--json"]);
    expect(notDir.json.error.code).toBe("INVALID_ARGUMENT");
  });

  it("removes the directory it made when the copy fails", () => {
    save("notes/damaged", "--content", "bytes about to change behind Cairn's back");
    const blobs = join(source, "blobs", "sha256");
    for (const prefix of readdirSync(blobs)) {
      for (const name of readdirSync(join(blobs, prefix))) writeFileSync(join(blobs, prefix, name), "x".repeat(64));
    }
    const target = join(dir, "never");
    const failed = cairn(["--workspace", source, "workspace", "copy", "--to", target, "--json"]);
    expect(failed.code).toBe(1);
    expect(failed.json.error.code).toBe("CORRUPT");
    expect(existsSync(target)).toBe(false);
  });
});
