// Hostile SQL against the DuckDB query engine: every way found to read, write or reconfigure beyond the inputs.
// Each attempt must be refused, and no byte of the secret files may appear in a result or an error.

import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CairnError, ErrorCode } from "../../src/errors.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import type { QueryInput } from "../../src/query/query-engine.js";
import { LIMITS, makeTempDir, writeFixture } from "./helpers.js";

const PASSWD = "/etc/passwd";
const PASSWD_MARKER = readFileSync(PASSWD, "utf8").split("\n")[0]?.split(":")[0] ?? "root";
const TOKEN = `cairn-secret-${Math.random().toString(36).slice(2)}`;

describe("DuckDbQueryEngine under hostile SQL", () => {
  let dir: string;
  let engine: DuckDbQueryEngine;
  let input: QueryInput;
  let secret: string;
  let outside: string;

  beforeAll(async () => {
    dir = makeTempDir("query-hostile");
    input = { path: writeFixture(dir, "input.csv", "a,b\n1,x\n2,y\n"), format: "csv" };
    // A sibling of the input: allowing the input's directory instead of the file itself would expose it.
    secret = writeFixture(dir, "secret.csv", `token,value\n${TOKEN},1\n`);
    outside = join(dir, "written.parquet");
    process.env.CAIRN_QUERY_TEST_SECRET = TOKEN;
    engine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
  });

  afterAll(async () => {
    delete process.env.CAIRN_QUERY_TEST_SECRET;
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the SQL, expects one of `codes`, and checks that nothing secret leaked into the error. */
  async function refused(sql: string, codes: string[], parameters?: unknown[]): Promise<CairnError> {
    let outcome: unknown;
    try {
      outcome = await engine.query({ inputs: [input], sql, parameters, limits: LIMITS });
    } catch (error) {
      outcome = error;
    }
    const text = JSON.stringify(outcome instanceof Error ? { message: outcome.message, outcome } : outcome);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toMatch(new RegExp(`${PASSWD_MARKER}:x?:?0:0`));
    expect(outcome, `${sql} was not refused: ${text}`).toBeInstanceOf(CairnError);
    const error = outcome as CairnError;
    expect(codes, `${sql}: ${error.message}`).toContain(error.code);
    return error;
  }

  const readers = [
    "read_csv",
    "read_csv_auto",
    "read_text",
    "read_blob",
    "read_json",
    "read_json_auto",
    "read_json_objects",
    "read_json_objects_auto",
    "read_ndjson",
    "read_ndjson_auto",
    "read_ndjson_objects",
    "read_parquet",
    "parquet_scan",
    "parquet_metadata",
    "parquet_schema",
    "parquet_file_metadata",
    "parquet_kv_metadata",
    "sniff_csv",
    "glob",
    "read_duckdb",
  ];

  it.each(readers)("refuses %s on /etc/passwd and on a sibling of the input", async (fn) => {
    for (const path of [PASSWD, "SECRET"]) {
      const target = path === "SECRET" ? secret : path;
      const error = await refused(`SELECT * FROM ${fn}('${target}')`, [ErrorCode.QUERY_FAILED]);
      expect(error.message).not.toContain(dir);
    }
  });

  it.each([
    ["a replacement scan of a path", "SELECT * FROM 'SECRET'"],
    ["a list mixing the input and a secret", "SELECT * FROM read_csv(['INPUT', 'SECRET'])"],
    ["a glob over the input's directory", "SELECT * FROM read_csv('DIR/*.csv')"],
    ["a path walking out of the input", "SELECT * FROM read_text('INPUT/../secret.csv')"],
    ["a file:// URL", "SELECT * FROM read_text('file://SECRET')"],
    ["an HTTP URL", "SELECT * FROM read_text('http://127.0.0.1:9/x')"],
    ["/proc of the process", "SELECT * FROM read_text('/proc/self/environ')"],
    ["a reader inside query()", "SELECT * FROM query('SELECT * FROM read_text(''SECRET'')')"],
    ["a statement inside query()", "SELECT * FROM query('ATTACH '':memory:'' AS x')"],
    ["query_table on a path", "SELECT * FROM query_table('SECRET')"],
    ["the extension directory", "SELECT * FROM duckdb_extensions()"],
    ["an environment variable", "SELECT getenv('CAIRN_QUERY_TEST_SECRET')"],
    ["an extension's reader", "SELECT * FROM read_xlsx('SECRET')"],
    ["a reader behind a CTE", "WITH s AS (SELECT * FROM read_csv('SECRET')) SELECT * FROM s"],
    ["a reader in a scalar subquery", "SELECT (SELECT content FROM read_text('SECRET')) AS c"],
    ["a path relative to the working directory", "SELECT * FROM read_text('package.json')"],
    ["a path in the home directory", "SELECT * FROM read_text('~/.bashrc')"],
    ["an S3 URL", "SELECT * FROM read_parquet('s3://bucket/key.parquet')"],
    ["a Hugging Face URL", "SELECT * FROM read_parquet('hf://datasets/x/y.parquet')"],
    ["a reader on a computed path", "SELECT * FROM read_text(concat('/etc/', 'passwd'))"],
  ])("refuses %s", async (_, template) => {
    const sql = template.replaceAll("SECRET", secret).replaceAll("INPUT", input.path).replaceAll("DIR", dir);
    await refused(sql, [ErrorCode.QUERY_FAILED, ErrorCode.SQL_REJECTED]);
  });

  it("refuses a secret path passed as a parameter", async () => {
    await refused("SELECT * FROM read_text(?)", [ErrorCode.QUERY_FAILED], [secret]);
  });

  it.each([
    "ATTACH ':memory:' AS other",
    `ATTACH '${join("/tmp", "cairn-attack.duckdb")}' AS other`,
    "DETACH memory",
    "INSTALL httpfs",
    "LOAD httpfs",
    "FORCE INSTALL httpfs",
    "COPY input1 TO 'OUT' (FORMAT parquet)",
    "COPY (SELECT 1) TO 'OUT'",
    "EXPORT DATABASE 'DIR'",
    "IMPORT DATABASE 'DIR'",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "RESET allowed_paths",
    "PRAGMA enable_external_access",
    "PRAGMA version",
    "CALL pragma_version()",
    "CREATE TABLE t AS SELECT 1",
    "CREATE MACRO m() AS 1",
    "CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')",
    "CREATE OR REPLACE VIEW input1 AS SELECT * FROM read_csv('SECRET')",
    "DROP VIEW input1",
    "INSERT INTO input1 VALUES (3, 'z')",
    "UPDATE input1 SET a = 0",
    "DELETE FROM input1",
    "ALTER VIEW input1 RENAME TO other",
    "BEGIN TRANSACTION",
    "CHECKPOINT",
    "VACUUM",
    "USE memory",
    "PREPARE p AS SELECT 1",
    "EXECUTE p",
    "EXPLAIN SELECT 1",
    "EXPLAIN ANALYZE SELECT 1",
    "WITH x AS (SELECT 1) INSERT INTO input1 SELECT * FROM x",
    "SELECT 1; ATTACH ':memory:' AS other",
    "SELECT 1 /* hidden */; COPY input1 TO 'OUT'",
    "SELECT 1; -- a comment\nATTACH ':memory:' AS other",
    "SELECT 1 -- only a comment here\n; SET threads = 1",
    "/* SELECT */ ATTACH ':memory:' AS other",
    "-- SELECT\nCOPY input1 TO 'OUT'",
    "/* /* nested */ SELECT */ ATTACH ':memory:' AS other",
    "(SELECT 1); CREATE TABLE t (x INT)",
    "SELECT 1;;;ATTACH ':memory:' AS other",
    "SELECT $$;$$ AS x; ATTACH ':memory:' AS other",
    "SELECT ';' AS x; COPY input1 TO 'OUT'",
  ])("rejects %j with SQL_REJECTED", async (template) => {
    const sql = template.replaceAll("SECRET", secret).replaceAll("OUT", outside).replaceAll("DIR", dir);
    const error = await refused(sql, [ErrorCode.SQL_REJECTED]);
    expect(error.message).toMatch(/one read-only SELECT/);
  });

  it("never lets a query read the files of an earlier query", async () => {
    const other = { path: writeFixture(dir, "other.csv", "c\n7\n"), format: "csv" as const };
    await engine.query({ inputs: [input, other], sql: "SELECT count(*) FROM input2", limits: LIMITS });
    await engine.query({ inputs: [input], sql: "SELECT count(*) FROM input1", limits: LIMITS });
    const error = await refused(`SELECT * FROM read_csv('${other.path}')`, [ErrorCode.QUERY_FAILED]);
    expect(error.message).toMatch(/<path>/);
    await refused("SELECT * FROM input2", [ErrorCode.QUERY_FAILED]);
    rmSync(other.path);
  });

  it("writes nothing anywhere", () => {
    expect(existsSync(outside)).toBe(false);
    expect(existsSync("/tmp/cairn-attack.duckdb")).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(["input.csv", "secret.csv", "spill"]);
  });

  it("keeps settings, secrets and the environment out of reach while still reading the input", async () => {
    const settings = await engine.query({
      inputs: [input],
      sql: "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', 'lock_configuration', 'autoload_known_extensions', 'autoinstall_known_extensions') ORDER BY name",
      limits: { ...LIMITS, maxPreviewBytes: 100_000 },
    });
    expect(settings.rows).toEqual([
      { name: "autoinstall_known_extensions", value: "false" },
      { name: "autoload_known_extensions", value: "false" },
      { name: "enable_external_access", value: "false" },
      { name: "lock_configuration", value: "true" },
    ]);
    const all = await engine.query({
      inputs: [input],
      sql: "SELECT * FROM duckdb_settings()",
      limits: { ...LIMITS, maxPreviewRows: 10_000, maxPreviewBytes: 10_000_000 },
    });
    expect(JSON.stringify(all)).not.toContain(TOKEN);
    const secrets = await engine.query({ inputs: [input], sql: "SELECT * FROM duckdb_secrets()", limits: LIMITS });
    expect(secrets.row_count).toBe(0);
    const own = await engine.query({ inputs: [input], sql: "SELECT sum(a) AS s FROM input1", limits: LIMITS });
    expect(own.rows).toEqual([{ s: 3 }]);
  });
});
