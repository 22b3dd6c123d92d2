import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer/encoding/o200k_base";

const profile = process.argv[2] ?? "agent";
const t = new StdioClientTransport({
  command: "node",
  args: ["dist/main.js", "serve", "--profile", profile],
  env: { ...process.env, CAIRN_HOME: "/tmp/ws-tl" },
  stderr: "ignore",
});
const c = new Client({ name: "t", version: "1" });
await c.connect(t);
const { tools } = await c.listTools();
const total = encode(JSON.stringify(tools)).length;
for (const tool of tools) console.log(tool.name.padEnd(16), encode(JSON.stringify(tool)).length);
console.log("total", total, "tools", tools.length, "avg", Math.round(total / tools.length));
await c.close();
