import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
const profile = process.argv[2] ?? "minimal";
const t = new StdioClientTransport({ command: "node", args: ["/work/main/dist/main.js", "serve", "--config", "/tmp/model/cairn.toml", "--workspace", "/tmp/model/ws", "--profile", profile], stderr: "ignore" });
const c = new Client({ name: "model", version: "1" });
await c.connect(t);
const show = async (name, args) => {
  const r = await c.callTool({ name, arguments: args });
  const text = r.content.map((x) => x.text ?? "").join("");
  console.log(`\n>>> ${name} ${JSON.stringify(args).slice(0, 200)}\n<<< [${encode(text).length} tok] ${text.slice(0, 1500)}`);
};
const run = (code) => show("execute_code", { code });
for (const code of process.argv.slice(3)) await run(code);
await c.close();
