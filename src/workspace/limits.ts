// The workspace's limits, as data: the operation schemas and descriptions state them and the workspace enforces them
// from this one place, so a number is never written twice.
import { MAX_SQL_CHARS } from "../query/query-engine.js";
import { MAX_DEPENDENCIES } from "./catalog/catalog.js";

export const WORKSPACE_LIMITS = {
  /** Characters of an artifact name. */
  nameChars: 120,
  /** Characters of a summary or source. */
  labelChars: 2000,
  /** Characters of each checkpoint field. */
  checkpointFieldChars: 65_536,
  /** UTF-8 bytes of text content saved directly. */
  textContentBytes: 1024 * 1024,
  /** Bytes of content saved from a session handle or by a snippet. */
  bytesContent: 64 * 1024 * 1024,
  /** Characters of a find or resume query. */
  queryTextChars: 1000,
  /** Versions one version may pin. */
  dependencies: MAX_DEPENDENCIES,
  /** Refs one inspect reads at once. */
  inspectRefs: 16,
  excerptBytes: { default: 2048, max: 8192 },
  findResults: { default: 10, max: 100 },
  listResults: { default: 20, max: 100 },
  /** Namespaces the first page of a list names (the rest are counted). */
  listNamespaces: 50,
  /** Namespaces `Workspace.namespaces` names at once (the web view's namespace index). */
  namespacesListed: 10_000,
  /** Characters of a saved snippet's description (decision 0242). */
  snippetDescriptionChars: 2000,
  /** Bytes of a saved snippet's input schema, as compact JSON. */
  snippetSchemaBytes: 16 * 1024,
} as const;

export const SQL_LIMITS = {
  /** Artifacts one query or describe reads (input1..inputN). */
  inputs: 8,
  /** Characters of one SQL statement. */
  sqlChars: MAX_SQL_CHARS,
  /** Values bound to ? in one query. */
  parameters: 1000,
  describeColumns: { default: 200, max: 1000 },
  /** Rows a whole result read in a snippet may hold (query rows: "all" or into: "result", read as: "rows"). */
  wholeRows: 1_000_000,
  /**
   * The share of sandbox.memory_mb a whole result's JSON may take when handed to a run: its parsed rows take
   * several times their JSON in the sandbox.
   */
  wholeRowsMemoryShare: 1 / 4,
} as const;
