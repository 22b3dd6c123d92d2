// Every row of a result written to a file as one JSON array, chunk by chunk: the engine never holds more than one
// chunk of rows in memory. Bounded by a row count and a byte count; past either, only the rows are counted.

import { closeSync, constants, openSync, rmSync, writeSync } from "node:fs";
import { groupDigits } from "../digits.js";
import { CairnError, ErrorCode } from "../errors.js";
import type { RowsTarget } from "./query-engine.js";
import { type DuckDbValueApi, type RowChunk, RowConverter, type ValueType } from "./result-preview.js";

const CREATE_FLAGS = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW;

/** What a finished file holds. */
export interface WrittenRows {
  path: string;
  bytes: number;
  integer_string_columns?: string[];
}

/**
 * A JSON array of rows being written to `target.path` (created exclusively, mode 0600). `add` every chunk, then
 * `finish` (the file is complete, or TOO_LARGE and no file) or `discard` after a failure elsewhere.
 */
export class RowsFile {
  private readonly converter: RowConverter;
  private readonly integerStringColumns = new Set<string>();
  private fd: number | undefined;
  /** Bytes written so far, the closing bracket counted ahead. */
  private bytes = 2;
  private written = 0;
  private seen = 0;
  private over: "rows" | "bytes" | undefined;

  constructor(
    duckdb: DuckDbValueApi,
    private readonly names: string[],
    types: readonly ValueType[],
    private readonly target: RowsTarget,
  ) {
    this.converter = new RowConverter(duckdb, names, types);
    this.fd = openSync(target.path, CREATE_FLAGS, 0o600);
    writeSync(this.fd, "[");
  }

  add(chunk: RowChunk): void {
    this.seen += chunk.rowCount;
    if (this.over !== undefined) return;
    if (this.seen > this.target.maxRows) {
      this.over = "rows";
      return;
    }
    const read = this.converter.open(chunk);
    const pieces: string[] = [];
    for (let r = 0; r < chunk.rowCount; r++) {
      const row = read(r, this.target.maxBytes - this.bytes);
      const text = row === undefined ? undefined : JSON.stringify(row);
      const size = text === undefined ? Number.POSITIVE_INFINITY : Buffer.byteLength(text) + (this.written > 0 ? 1 : 0);
      if (this.bytes + size > this.target.maxBytes) {
        this.over = "bytes";
        break;
      }
      pieces.push(this.written > 0 ? `,${text}` : (text as string));
      this.bytes += size;
      this.written++;
      for (const column of this.converter.integerStrings) this.integerStringColumns.add(column);
    }
    if (pieces.length > 0) writeSync(this.fd as number, pieces.join(""));
  }

  /** Closes the array; a result past either limit fails with TOO_LARGE, naming both, and its file is removed. */
  finish(): WrittenRows {
    if (this.over !== undefined) {
      this.discard();
      const { maxRows, maxBytes } = this.target;
      const why =
        this.over === "rows"
          ? `the result has ${groupDigits(this.seen)} rows, over the ${groupDigits(maxRows)} rows a whole result may hold`
          : `the result's ${groupDigits(this.seen)} rows pass ${groupDigits(maxBytes)} bytes of JSON (the first ${groupDigits(this.written)} fit)`;
      throw new CairnError(ErrorCode.TOO_LARGE, why, {
        data: { row_count: this.seen, rows_that_fit: this.written, max_rows: maxRows, max_bytes: maxBytes },
      });
    }
    writeSync(this.fd as number, "]");
    closeSync(this.fd as number);
    this.fd = undefined;
    const written: WrittenRows = { path: this.target.path, bytes: this.bytes };
    if (this.integerStringColumns.size > 0) {
      written.integer_string_columns = this.names.filter((name) => this.integerStringColumns.has(name));
    }
    return written;
  }

  /** Closes and removes the file, finished or not; never throws. */
  discard(): void {
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {
        // Already reported by the failure that led here.
      }
      this.fd = undefined;
    }
    rmSync(this.target.path, { force: true });
  }
}
