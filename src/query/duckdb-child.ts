// The child process behind ChildProcessQueryEngine: one in-process DuckDbQueryEngine answering IPC messages.
// It trusts its parent to stop it: a timeout, a cancel or the memory cap ends this process with SIGKILL.

import { rmSync } from "node:fs";
import { isCairnError } from "../errors.js";
import type { ChildMessage, ParentMessage } from "./duckdb-process.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngineOptions } from "./duckdb-query-engine.js";

const options = JSON.parse(process.argv[2] ?? "{}") as DuckDbQueryEngineOptions & { tempDir: string };
const send = (message: ChildMessage) => process.send?.(message);

// An orphan must not keep running: when the parent goes away (even killed), this process goes too, and its spill
// files with it (exit handlers run on process.exit).
process.on("disconnect", () => process.exit(0));
process.on("exit", () => rmSync(options.tempDir, { recursive: true, force: true }));

try {
  const engine = await createDuckDbQueryEngine(options);
  process.on("message", (message: ParentMessage) => {
    if (message.type === "close") {
      void engine.close().finally(() => process.exit(0));
      return;
    }
    const work = message.kind === "query" ? engine.query(message.request) : engine.describe(message.request);
    work.then(
      (value) => send({ type: "reply", id: message.id, ok: true, value }),
      (error: unknown) =>
        send({
          type: "reply",
          id: message.id,
          ok: false,
          error: isCairnError(error)
            ? error.toJSON()
            : {
                code: "INTERNAL",
                message: `internal error: ${error instanceof Error ? error.message : String(error)}`,
              },
        }),
    );
  });
  send({ type: "ready" });
} catch (error) {
  send({ type: "failed", error: isCairnError(error) ? error.toJSON() : { code: "INTERNAL", message: String(error) } });
  process.exit(1);
}
