// Test helper: the built `cairn serve --transport http` on a free loopback port, resolved with the URL it prints.
import { type ChildProcess, spawn } from "node:child_process";
import { MAIN } from "./mcp-client.js";

export interface ServedHttp {
  url: string;
  port: number;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** Starts the server with `args` after `serve --transport http --port 0`; rejects with its stderr if it exits. */
export function serveHttp(args: string[], env: Record<string, string>, cwd: string): Promise<ServedHttp> {
  const child = spawn(process.execPath, [MAIN, "serve", "--transport", "http", "--port", "0", ...args], {
    env: { ...process.env, CAIRN_LOG: "error", ...env },
    stdio: ["ignore", "ignore", "pipe"],
    cwd,
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving MCP over Streamable HTTP at (http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ url: match[1] as string, port: Number(new URL(match[1] as string).port), child, exited });
    });
    child.once("exit", (code) => reject(new Error(`cairn serve exited ${code}: ${stderr}`)));
  });
}
