// The child process behind ChildProcessQueryEngine: one in-process DuckDbQueryEngine answering IPC messages.
// It trusts its parent to stop it: a timeout, a cancel or the memory cap ends this process with SIGKILL.

import { rmSync } from "node:fs";
import { isCairnError } from "../errors.js";
import type { ChildMessage, ParentMessage } from "./duckdb-process.js";
import { createDuckDbQueryEngine, type DuckDbQueryEngineOptions } from "./duckdb-query-engine.js";
import { clip } from "./redact.js";

const options = JSON.parse(process.argv[2] ?? "{}") as DuckDbQueryEngineOptions & { tempDir: string };
const send = (message: ChildMessage) => process.send?.(message);

// An orphan must not keep running: when the parent goes away (even killed), this process goes too, with its spill
// files. Not through process.exit: at exit DuckDB waits for a running query that nobody interrupts (measured: an
// orphan stayed alive with a trillion-row count still running), so the process kills itself.
function end(): never {
  rmSync(options.tempDir, { recursive: true, force: true });
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable: SIGKILL cannot be caught");
}
process.on("disconnect", end);

try {
  const engine = await createDuckDbQueryEngine(options);
  process.on("message", (message: ParentMessage) => {
    if (message.type === "close") {
      void engine.close().finally(end);
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
          // The message is cut here too, so that no reply can carry megabytes over the channel.
          error: isCairnError(error)
            ? { ...error.toJSON(), message: clip(error.message) }
            : {
                code: "INTERNAL",
                message: clip(`internal error: ${error instanceof Error ? error.message : String(error)}`),
              },
        }),
    );
  });
  send({ type: "ready" });
} catch (error) {
  const failed: ChildMessage = {
    type: "failed",
    error: isCairnError(error) ? error.toJSON() : { code: "INTERNAL", message: String(error) },
  };
  process.send?.(failed, end);
}
