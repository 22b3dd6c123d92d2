// A real workspace, DuckDB engine and TaskService in a temp dir for the schedule and verify tests, with a CSV source
// that a test moves by importing a new version.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigSchema } from "../../src/config/schema.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngine } from "../../src/query/duckdb-query-engine.js";
import { TaskService } from "../../src/tasks/tasks.js";
import { WorkspaceSql } from "../../src/workspace/sql.js";
import { openWorkspace, type Workspace } from "../../src/workspace/workspace.js";
import { makeTempDir } from "../query/helpers.js";

export interface TaskBed {
  dir: string;
  ws: Workspace;
  tasks: TaskService;
  /** Imports `csv` as a new version of `name`. */
  source(name: string, csv: string): Promise<{ artifact_id: string; version: number }>;
  /** Defines a one-step SQL task over the source `from` (alias a). */
  define(name: string, from: string, options?: { pin?: boolean; sql?: string }): Promise<void>;
  close(): Promise<void>;
}

export async function openTaskBed(prefix: string): Promise<TaskBed> {
  const dir = makeTempDir(prefix);
  const ws = await openWorkspace(join(dir, "ws"), { chunkInBackground: false });
  const engine: DuckDbQueryEngine = await createDuckDbQueryEngine({ tempDir: join(dir, "spill") });
  const sql = new WorkspaceSql(ws, async () => engine, ConfigSchema.parse({}).workspace, join(dir, "ws", "scratch"));
  const tasks = new TaskService({
    workspace: ws,
    sql,
    actor: "tester",
    runSnippet: async () => ({ ok: false, code: "INVALID_ARGUMENT", message: "no sandbox in these tests" }),
  });
  let files = 0;
  return {
    dir,
    ws,
    tasks,
    async source(name, csv) {
      const path = join(dir, `source-${++files}.csv`);
      writeFileSync(path, csv);
      const [current] = await ws.lookup([name]);
      const saved = await ws.import({ path, name, expected_version: current?.version });
      return { artifact_id: saved.artifact_id, version: saved.version };
    },
    async define(name, from, options = {}) {
      const existing = await ws.tasks.task(name);
      await tasks.define({
        name,
        objective: `totals of ${from}`,
        sources: { a: from },
        steps: [{ name: "s1", inputs: ["a"], sql: options.sql ?? "SELECT sum(amount) AS total FROM input1" }],
        pin_sources: options.pin,
        expected_version: existing?.current_version,
      });
    },
    async close() {
      await engine.close();
      await ws.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
