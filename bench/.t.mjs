import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../dist/app.js";
import { ConfigSchema } from "../dist/config/schema.js";
import { createLogger } from "../dist/log.js";

const dir = mkdtempSync(join(tmpdir(), "tt-"));
const app = createApp(
  { config: ConfigSchema.parse({}), configPath: null, workspaceDir: join(dir, "ws") },
  { logger: createLogger("t", () => {}) },
);
const op = (n) => app.operations.find((o) => o.name === n);
const ctx = { services: app.services, session: app.newSession("t"), surface: "cli" };
const call = (n, a) => op(n).handler(op(n).input.parse(a), ctx);
writeFileSync(join(dir, "a.csv"), "k,v\n" + Array.from({ length: 1000 }, (_, i) => `${i % 10},${i}`).join("\n"));
await call("import", { path: join(dir, "a.csv"), name: "a" });
await call("task_define", {
  name: "t",
  objective: "o",
  sources: { a: "a" },
  steps: [
    { name: "s1", inputs: ["a"], sql: "SELECT k, sum(v) s FROM input1 GROUP BY k" },
    { name: "s2", inputs: ["s1"], sql: "SELECT max(s) m FROM input1" },
    { name: "s3", inputs: ["s2", "a"], sql: "SELECT count(*) FROM input2, input1 WHERE v < m" },
  ],
});
let t = performance.now();
await call("task_run", { name: "t" });
console.log("cold", (performance.now() - t).toFixed(1));
const times = [];
for (let i = 0; i < 20; i++) {
  t = performance.now();
  await call("task_run", { name: "t" });
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
console.log("cached median", times[10].toFixed(1), "min", times[0].toFixed(1));
await app.close();
