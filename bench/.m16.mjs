import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { rmSync } from "node:fs";
rmSync("/tmp/model/ws16", { recursive: true, force: true });
const session = async () => {
  const t = new StdioClientTransport({ command: "node", args: ["/work/main/dist/main.js", "serve", "--config", "/tmp/model/cairn.toml", "--workspace", "/tmp/model/ws16", "--profile", "runtime"], stderr: "ignore" });
  const c = new Client({ name: "model", version: "1" });
  await c.connect(t);
  const show = async (name, args) => {
    const r = await c.callTool({ name, arguments: args });
    const text = r.content.map((x) => x.text ?? "").join("");
    console.log(`\n>>> ${name} ${JSON.stringify(args).slice(0, 140)}\n<<< [${encode(text).length} tok${r.isError ? " ERR" : ""}] ${text.slice(0, 700)}`);
    try { return JSON.parse(text); } catch { return text; }
  };
  return { c, show };
};
let { c, show } = await session();
await show("execute_code", { code: "const r = await everything.get_sum({a: 2, b: 40}); await workspace.save({name: 'notes/answer', content: 'The answer to the sum is 42, computed by everything.get_sum'}); return r" });
await show("remember", { text: "Decided: use get_sum for totals; next step is to chart the totals by month", event_id: "dec-1" });
await show("remember", { text: "Decided: use get_sum for totals; next step is to chart the totals by month", event_id: "dec-1" });
await show("remember", { text: "something else", event_id: "dec-1" });
await show("claim", { resource: "notes/answer", ttl_s: 60 });
await show("session-status", {});
await c.close();
({ c, show } = await session());
await show("recall", { query: "what did we decide about totals and the next step" });
await show("recall", {});
await show("provenance", { ref: "notes/answer" });
await show("changes", { limit: 3 });
await show("claim", { resource: "notes/answer", ttl_s: 60 });
await show("save", { name: "notes/answer", content: "overwrite", expected_version: 1, ticket: 99 });
await show("metrics", { operation: "remember" });
await c.close();
