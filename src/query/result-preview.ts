// A query result's rows as plain JSON (see QueryResult), and its preview: rows kept up to the row and byte budgets.
// It is handed DuckDB's module by the engine rather than loading it, so the native module keeps its one importer.

import type { QueryLimits } from "./query-engine.js";

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const BLOB_INLINE_BYTES = 256;

/** A column's DuckDB type, as far as the preview looks at it. */
export interface ValueType {
  readonly typeId: number;
}

/** One column of a chunk (node-api's DuckDBVector). */
interface ColumnVector {
  getItem(row: number): unknown;
}

/** A chunk of result rows (node-api's DuckDBDataChunk), read column by column. */
export interface RowChunk {
  readonly rowCount: number;
  getColumnVector(column: number): ColumnVector;
}

type Instances<T> = new (...args: never[]) => T;

type TypeIdName =
  | "BOOLEAN"
  | "TINYINT"
  | "SMALLINT"
  | "INTEGER"
  | "UTINYINT"
  | "USMALLINT"
  | "UINTEGER"
  | "VARCHAR"
  | "BIGINT"
  | "UBIGINT"
  | "HUGEINT"
  | "UHUGEINT"
  | "BIGNUM"
  | "FLOAT"
  | "DOUBLE"
  | "TIMESTAMP"
  | "TIMESTAMP_S"
  | "TIMESTAMP_MS"
  | "TIMESTAMP_NS"
  | "TIMESTAMP_TZ"
  | "BLOB"
  | "LIST";

/**
 * The parts of node-api's module that the conversion reads: type ids, and the classes of nested values and types.
 * The engine passes the loaded module itself; the compiler checks that it still has this shape.
 */
export interface DuckDbValueApi {
  DuckDBTypeId: Readonly<Record<TypeIdName, number>>;
  DuckDBListValue: Instances<{ readonly items: readonly unknown[] }>;
  DuckDBArrayValue: Instances<{ readonly items: readonly unknown[] }>;
  DuckDBStructValue: Instances<{ readonly entries: Readonly<Record<string, unknown>> }>;
  DuckDBStructType: Instances<{ readonly entryNames: readonly string[]; readonly entryTypes: readonly ValueType[] }>;
  DuckDBMapValue: Instances<{ readonly entries: readonly { key: unknown; value: unknown }[] }>;
  DuckDBMapType: Instances<{ readonly keyType: ValueType; readonly valueType: ValueType }>;
  DuckDBUnionValue: Instances<{ readonly tag: string; readonly value: unknown }>;
  DuckDBUnionType: Instances<{ memberTypeForTag(tag: string): ValueType }>;
}

/** Reads a chunk's rows as plain JSON objects (see QueryResult); a value too big for the budget is never copied. */
export class RowConverter {
  /** Top-level columns in which the last row read had an integer become a string. */
  readonly integerStrings = new Set<string>();
  private readonly converter: (value: unknown, type: ValueType, column: string) => unknown;
  private readonly varcharId: number;
  private readonly listId: number;
  private readonly blobId: number;

  constructor(
    duckdb: DuckDbValueApi,
    private readonly names: readonly string[],
    private readonly types: readonly ValueType[],
  ) {
    this.converter = createJsonConverter(duckdb, (column) => this.integerStrings.add(column));
    this.varcharId = duckdb.DuckDBTypeId.VARCHAR;
    this.listId = duckdb.DuckDBTypeId.LIST;
    this.blobId = duckdb.DuckDBTypeId.BLOB;
  }

  /**
   * A reader of `chunk`'s rows: row `r` as an object, or undefined when one of its values could never fit in
   * `maxBytes` of JSON (a text longer than that, a list of more than half as many items), which is then not copied.
   */
  open(chunk: RowChunk): (row: number, maxBytes: number) => Record<string, unknown> | undefined {
    const vectors = this.names.map((_, c) => chunk.getColumnVector(c));
    const lengths = vectors.map((vector, c) => {
      const id = (this.types[c] as ValueType).typeId;
      if (id === this.listId) return peekListLengths(vector);
      return id === this.varcharId || id === this.blobId ? peekStringLengths(vector) : undefined;
    });
    return (r, maxBytes) => {
      const entries: [string, unknown][] = [];
      this.integerStrings.clear();
      for (let c = 0; c < vectors.length; c++) {
        const name = this.names[c] as string;
        const type = this.types[c] as ValueType;
        // A huge text or blob is sized before it is copied into JavaScript: it could never fit.
        const length = lengths[c]?.(r);
        if (length !== undefined && type.typeId === this.varcharId && length > maxBytes) return undefined;
        // N items need at least 2N-1 characters of JSON: such a list could never fit, and converting it whole
        // into JavaScript first could take more memory than the query itself.
        if (length !== undefined && type.typeId === this.listId && 2 * length > maxBytes) return undefined;
        if (length !== undefined && type.typeId === this.blobId && length > BLOB_INLINE_BYTES) {
          entries.push([name, `[BLOB of ${length} bytes]`]);
        } else {
          entries.push([name, this.converter((vectors[c] as ColumnVector).getItem(r), type, name)]);
        }
      }
      // fromEntries defines own properties, so a column named __proto__ stays a column.
      return Object.fromEntries(entries);
    };
  }
}

/** Builds the JSON preview: rows stop at the row or byte budget, whichever comes first. */
export class PreviewBuilder {
  readonly rows: Record<string, unknown>[] = [];
  /** Top-level columns in which some integer had to become a string (QueryResult's `integer_string_columns`). */
  readonly integerStringColumns = new Set<string>();
  private bytes = 2; // the brackets of the JSON array
  private full: boolean;
  private readonly converter: RowConverter;

  constructor(
    duckdb: DuckDbValueApi,
    names: string[],
    types: readonly ValueType[],
    private readonly limits: QueryLimits,
  ) {
    this.full = limits.maxPreviewRows === 0;
    this.converter = new RowConverter(duckdb, names, types);
  }

  /** Converts the chunk's rows into the preview until it is full; rows past that are only counted by the caller. */
  add(chunk: RowChunk): void {
    if (this.full) return;
    const read = this.converter.open(chunk);
    for (let r = 0; r < chunk.rowCount && !this.full; r++) {
      const row = read(r, this.limits.maxPreviewBytes);
      if (row === undefined) {
        this.full = true;
        break;
      }
      const size = Buffer.byteLength(JSON.stringify(row)) + (this.rows.length > 0 ? 1 : 0);
      if (this.bytes + size > this.limits.maxPreviewBytes) {
        this.full = true;
        break;
      }
      this.bytes += size;
      this.rows.push(row);
      for (const column of this.converter.integerStrings) this.integerStringColumns.add(column);
      if (this.rows.length >= this.limits.maxPreviewRows) this.full = true;
    }
  }
}

/**
 * Byte lengths of a VARCHAR or BLOB vector's items without copying them: DuckDB's string_t keeps a 32-bit length
 * at the start of each 16-byte slot. Reads node-api's internal view of the vector; when that is absent (another
 * node-api version) it returns undefined and values are simply read whole.
 */
function peekStringLengths(vector: ColumnVector): ((row: number) => number | undefined) | undefined {
  const inner = vector as unknown as { dataView?: unknown; validity?: { itemValid?: unknown } };
  const view = inner.dataView;
  const validity = inner.validity;
  if (!(view instanceof DataView) || typeof validity?.itemValid !== "function") return undefined;
  const valid = validity.itemValid.bind(validity) as (row: number) => boolean;
  return (row) => (valid(row) && (row + 1) * 16 <= view.byteLength ? view.getUint32(row * 16, true) : undefined);
}

/**
 * Item counts of a top-level LIST vector's rows without converting them: node-api keeps DuckDB's list entries
 * (offset, length) as a BigUint64Array. Undefined when that internal view is absent (another node-api version).
 */
function peekListLengths(vector: ColumnVector): ((row: number) => number | undefined) | undefined {
  const inner = vector as unknown as { entryData?: unknown; validity?: { itemValid?: unknown } };
  const entries = inner.entryData;
  const validity = inner.validity;
  if (!(entries instanceof BigUint64Array) || typeof validity?.itemValid !== "function") return undefined;
  const valid = validity.itemValid.bind(validity) as (row: number) => boolean;
  return (row) => (valid(row) && row * 2 + 1 < entries.length ? Number(entries[row * 2 + 1]) : undefined);
}

/**
 * DuckDB values to plain JSON (see QueryResult): never a bigint, exact decimals and big integers as strings.
 * `onIntegerString` hears of every integer that had to become a string, by top-level column.
 */
function createJsonConverter(
  duckdb: DuckDbValueApi,
  onIntegerString: (column: string) => void,
): (value: unknown, type: ValueType, column: string) => unknown {
  const T = duckdb.DuckDBTypeId;
  const convert = (value: unknown, type: ValueType, column: string): unknown => {
    if (value === null || value === undefined) return null;
    switch (type.typeId) {
      case T.BOOLEAN:
      case T.TINYINT:
      case T.SMALLINT:
      case T.INTEGER:
      case T.UTINYINT:
      case T.USMALLINT:
      case T.UINTEGER:
      case T.VARCHAR:
        return value;
      case T.BIGINT:
      case T.UBIGINT:
      case T.HUGEINT:
      case T.UHUGEINT:
      case T.BIGNUM: {
        const n = value as bigint;
        if (n <= MAX_SAFE && n >= -MAX_SAFE) return Number(n);
        onIntegerString(column);
        return n.toString();
      }
      case T.FLOAT:
        return Number.isFinite(value) ? shortestFloat32(value as number) : String(value);
      case T.DOUBLE:
        return Number.isFinite(value) ? value : String(value);
      case T.TIMESTAMP:
      case T.TIMESTAMP_S:
      case T.TIMESTAMP_MS:
      case T.TIMESTAMP_NS:
        return isoTimestamp(String(value), false);
      case T.TIMESTAMP_TZ:
        return isoTimestamp(String(value), true);
      case T.BLOB: {
        const bytes = (value as { bytes: Uint8Array }).bytes;
        return bytes.length <= BLOB_INLINE_BYTES
          ? Buffer.from(bytes).toString("base64")
          : `[BLOB of ${bytes.length} bytes]`;
      }
      default:
        break;
    }
    if (value instanceof duckdb.DuckDBListValue || value instanceof duckdb.DuckDBArrayValue) {
      const itemType = (type as ValueType & { readonly valueType: ValueType }).valueType;
      return value.items.map((item) => convert(item, itemType, column));
    }
    if (value instanceof duckdb.DuckDBStructValue && type instanceof duckdb.DuckDBStructType) {
      return Object.fromEntries(
        type.entryNames.map((name, i) => [
          name,
          convert(value.entries[name] ?? null, type.entryTypes[i] as ValueType, column),
        ]),
      );
    }
    if (value instanceof duckdb.DuckDBMapValue && type instanceof duckdb.DuckDBMapType) {
      return value.entries.map((e) => ({
        key: convert(e.key, type.keyType, column),
        value: convert(e.value, type.valueType, column),
      }));
    }
    if (value instanceof duckdb.DuckDBUnionValue && type instanceof duckdb.DuckDBUnionType) {
      return { tag: value.tag, value: convert(value.value, type.memberTypeForTag(value.tag), column) };
    }
    // DECIMAL, DATE, TIME, INTERVAL, UUID, ENUM, BIT, ...: DuckDB's exact text form.
    return String(value);
  };
  return convert;
}

/** The shortest decimal that reads back as the same 32-bit float: 0.1, not 0.10000000149011612. */
function shortestFloat32(value: number): number {
  for (let digits = 1; digits < 9; digits++) {
    const candidate = Number(value.toPrecision(digits));
    if (Math.fround(candidate) === value) return candidate;
  }
  return Number(value.toPrecision(9));
}

/** `2024-01-02 03:04:05.5+00` -> `2024-01-02T03:04:05.5Z`; infinite and BC values keep DuckDB's text. */
function isoTimestamp(text: string, utc: boolean): string {
  const match = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)(\+00)?$/.exec(text);
  if (!match) return text;
  return `${match[1]}T${match[2]}${utc ? "Z" : ""}`;
}
