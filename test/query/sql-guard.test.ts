// The lexical first look at query SQL: leading keywords past comments, and the early SQL_REJECTED it gives.
// DuckDB's parser remains the authority; these cases pin down only what the guard itself promises.

import { describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import { assertReadOnlyLeadingKeyword, leadingKeyword } from "../../src/query/sql-guard.js";

describe("leadingKeyword", () => {
  it.each([
    ["SELECT 1", "SELECT"],
    ["  with x as (select 1) select * from x", "WITH"],
    ["-- note\nFROM input1", "FROM"],
    ["/* a /* nested */ comment */ values (1)", "VALUES"],
    [";\n  (SELECT 1)", "("],
    ["/* SELECT */ ATTACH 'x'", "ATTACH"],
    ["-- SELECT\nCOPY t TO 'x'", "COPY"],
    ["PRAGMA version", "PRAGMA"],
    ["1 + 1", "1"],
  ])("reads %j as %s", (sql, keyword) => {
    expect(leadingKeyword(sql)).toBe(keyword);
  });

  it.each(["", "   ", "-- only a comment", "/* never closed SELECT 1", ";;"])("finds no statement in %j", (sql) => {
    expect(leadingKeyword(sql)).toBeNull();
  });
});

describe("assertReadOnlyLeadingKeyword", () => {
  it("names the refused keyword and what is allowed", () => {
    expect(() => assertReadOnlyLeadingKeyword("ATTACH ':memory:'")).toThrowError(
      expect.objectContaining({
        code: ErrorCode.SQL_REJECTED,
        message: expect.stringMatching(/ATTACH.*one read-only SELECT/),
      }),
    );
  });

  it("lets read-only queries through", () => {
    for (const sql of ["SELECT 1", "WITH a AS (SELECT 1) SELECT * FROM a", "FROM input1", "DESCRIBE input1"]) {
      expect(() => assertReadOnlyLeadingKeyword(sql)).not.toThrow();
    }
  });
});
