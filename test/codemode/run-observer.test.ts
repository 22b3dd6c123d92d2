// The code runner's observer and cancellation, in process with the real app (QuickJS executor, stores): what a run
// tells the observer while it runs, that it tells nothing once settled, and that a cancelled run answers CANCELLED.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, createApp } from "../../src/app.js";
import type { RunObserver } from "../../src/codemode/execute-code.js";
import { ConfigSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";

let dir: string;
let app: App;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cairn-observer-"));
  app = createApp(
    { config: ConfigSchema.parse({}), configPath: null, workspaceDir: join(dir, "ws") },
    { logger: createLogger("test", () => {}) },
  );
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

function recorder(onLog: (line: string) => void = () => {}) {
  const heard: string[] = [];
  let settled = false;
  const late: string[] = [];
  const observer: RunObserver = {
    hostCall: (name) => (settled ? late : heard).push(`call ${name}`),
    log: (line) => {
      (settled ? late : heard).push(`log ${line}`);
      onLog(line);
    },
    upstreamProgress: (capability) => (settled ? late : heard).push(`progress ${capability}`),
  };
  return { observer, heard, late, settle: () => (settled = true) };
}

describe("CodeRunner with an observer", () => {
  it("tells the observer each host call and the console lines, and nothing once the run has settled", async () => {
    const { observer, heard, late, settle } = recorder();
    const reply = await app.runner.run(
      app.newSession("observer"),
      {
        code: "console.log('start'); const h = await save_result(1); await load_result(h); console.log('end'); return 2",
      },
      undefined,
      observer,
    );
    settle();
    expect(JSON.parse(reply.text)).toMatchObject({ ok: true, value: 2, stats: { tool_calls: 2 } });
    expect(heard).toEqual(["log start", "call save_result", "call load_result", "log end"]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(late).toEqual([]);
  });

  it("ends a run cancelled while it waits with CANCELLED, and runs the next one", async () => {
    const controller = new AbortController();
    const { observer } = recorder((line) => {
      if (line === "waiting") controller.abort();
    });
    const reply = await app.runner.run(
      app.newSession("observer"),
      { code: "console.log('waiting'); await new Promise((r) => setTimeout(r, 60000)); return 'never'" },
      controller.signal,
      observer,
    );
    expect(JSON.parse(reply.text)).toMatchObject({ ok: false, error: { code: "CANCELLED" } });
    const next = await app.runner.run(app.newSession("observer"), { code: "return 'next'" });
    expect(JSON.parse(next.text)).toMatchObject({ ok: true, value: "next" });
  });
});
