// A lexical first look at query SQL: which keyword leads the statement, once comments and blanks are skipped.
// It only gives early, clear refusals; DuckDB's own parser (statement count and type) has the final word.

import { CairnError, ErrorCode } from "../errors.js";

/** Leading keywords of statements DuckDB plans as a read-only SELECT. `(` opens a parenthesised query. */
const READ_ONLY_LEADING_KEYWORDS: ReadonlySet<string> = new Set([
  "SELECT",
  "WITH",
  "FROM",
  "VALUES",
  "TABLE",
  "(",
  "DESCRIBE",
  "SUMMARIZE",
  "PIVOT",
  "UNPIVOT",
]);

export const ALLOWED_SQL_HINT =
  "write exactly one read-only SELECT (or WITH ... SELECT, FROM ..., VALUES, DESCRIBE, SUMMARIZE) over the " +
  "views input1..inputN; ATTACH, COPY, CREATE, INSTALL, LOAD, SET, PRAGMA, CALL and other statements are not allowed";

/**
 * Returns the statement's first keyword in upper case (`"("` for a parenthesis), or null when the text holds
 * nothing but blanks and comments. Block comments nest, as in DuckDB's scanner; an unclosed one counts as empty.
 */
export function leadingKeyword(sql: string): string | null {
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i] as string;
    if (/\s/.test(c) || c === ";") {
      i++;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      if (end === -1) return null;
      i = end + 1;
    } else if (c === "/" && sql[i + 1] === "*") {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === "/" && sql[i + 1] === "*") {
          depth++;
          i += 2;
        } else if (sql[i] === "*" && sql[i + 1] === "/") {
          depth--;
          i += 2;
        } else {
          i++;
        }
      }
      if (depth > 0) return null;
    } else if (c === "(") {
      return "(";
    } else {
      const word = /^[A-Za-z_]+/.exec(sql.slice(i, i + 64));
      return word ? word[0].toUpperCase() : c;
    }
  }
  return null;
}

/** Throws `SQL_REJECTED` unless the SQL starts like a read-only query. */
export function assertReadOnlyLeadingKeyword(sql: string): void {
  const keyword = leadingKeyword(sql);
  if (keyword === null) {
    throw new CairnError(ErrorCode.SQL_REJECTED, `the SQL holds no statement: ${ALLOWED_SQL_HINT}`);
  }
  if (!READ_ONLY_LEADING_KEYWORDS.has(keyword)) {
    throw new CairnError(
      ErrorCode.SQL_REJECTED,
      `a statement starting with ${keyword} is not allowed: ${ALLOWED_SQL_HINT}`,
      {
        data: { keyword },
      },
    );
  }
}
