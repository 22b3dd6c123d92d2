// A private temp directory for one DuckDB instance or child, under the engine's configured temp root.
import { mkdir, mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { CairnError, ErrorCode } from "../errors.js";

/** Creates `root` if needed and a fresh `cairn-duckdb-*` directory in it; INTERNAL naming the cause when it cannot. */
export async function createEngineTempDir(root: string): Promise<string> {
  try {
    await mkdir(root, { recursive: true });
    return await mkdtemp(join(root, "cairn-duckdb-"));
  } catch (error) {
    throw new CairnError(
      ErrorCode.INTERNAL,
      `the query engine cannot create its temp directory under the configured temp dir: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
