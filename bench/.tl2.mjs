import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const t = new StdioClientTransport({
  command: "node",
  args: ["dist/main.js", "serve", "--profile", "full"],
  env: { ...process.env, CAIRN_HOME: "/tmp/ws-tl" },
  stderr: "ignore",
});
const c = new Client({ name: "t", version: "1" });
await c.connect(t);
const { tools } = await c.listTools();
for (const tool of tools.filter((t) => process.argv.slice(2).includes(t.name))) console.log(JSON.stringify(tool));
await c.close();
