// Both eras of upstream through the built server (decision 0262): a snippet calls a 2026-07-28 server (SDK v2) and a
// 2025 one (server-everything, SDK v1) in one run; an upstream that asks for input mid-call is refused with what it
// asked; `cairn upstream check` says which version each server speaks.
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connected, connect, MAIN } from "../helpers/mcp-client.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const fixture = (name: string) => resolve(import.meta.dirname, "../fixtures/servers", name);

const toml = `
[servers.modern]
command = "${process.execPath}"
args = ["${fixture("modern.mjs")}", "--ttl-ms", "60000"]

[servers.everything]
command = "${process.execPath}"
args = ["${everything}", "stdio"]

[servers.raw]
command = "${process.execPath}"
args = ["${fixture("raw-modern.mjs")}"]
`;

let c: Connected;
beforeAll(async () => {
  c = await connect(toml);
});
afterAll(async () => {
  await c.close();
});

describe("upstreams of both eras through cairn serve", () => {
  it("calls a 2026-07-28 server and a 2025 one from one snippet", async () => {
    const r = await c.run(`
      const a = await modern.echo({ text: "from 2026" });
      const b = await everything.echo({ message: "from 2025" });
      return [a, b];
    `);
    expect(r.isError).toBe(false);
    const [modern, legacy] = r.json.value;
    expect(modern.text).toBe("from 2026");
    expect(JSON.stringify(legacy)).toContain("from 2025");
  });

  it("refuses an upstream's input_required with TOOL_FAILED naming what it asked, and goes on", async () => {
    const r = await c.run(`
      const out = [];
      for (const call of [() => raw.ask({}), () => modern.confirm({ what: "deploy" })]) {
        try { await call(); out.push("answered") } catch (e) { out.push([e.code, e.message]) }
      }
      return out;
    `);
    const [[rawCode, rawMessage], [sdkCode, sdkMessage]] = r.json.value;
    expect(rawCode).toBe("TOOL_FAILED");
    expect(rawMessage).toContain("raw.ask asked for input");
    expect(rawMessage).toContain("Type the password of the production database");
    expect(sdkCode).toBe("TOOL_FAILED");
    expect(sdkMessage).toContain("modern.confirm asked for input");
    expect((await c.run(`return (await modern.echo({ text: "still" })).text`)).json.value).toBe("still");
  });
});

describe("cairn upstream check", () => {
  it("prints the MCP version each server speaks", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-eras-"));
    const config = join(dir, "cairn.toml");
    writeFileSync(config, toml);
    // The exit status says whether its call succeeded too (a read-only tool, with no arguments): not looked at here.
    const check = async (server: string) => {
      const stdout = await new Promise<string>((done) => {
        execFile(
          process.execPath,
          [MAIN, "upstream", "check", server, "--json", "--config", config],
          { env: { ...process.env, CAIRN_LOG: "error" } },
          (_error, out) => done(String(out)),
        );
      });
      return JSON.parse(stdout) as { status: string; protocol?: string };
    };
    expect(await check("modern")).toMatchObject({ status: "ready", protocol: "2026-07-28" });
    expect((await check("everything")).protocol).toMatch(/^2025-/);
  });
});

describe("trace context through cairn serve (decision 0262)", () => {
  const INCOMING = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
  const SNIPPET = `
    const a = await modern.echo({ text: "one" });
    const b = await modern.echo({ text: "two" });
    return [a.meta?.traceparent ?? null, b.meta?.traceparent ?? null, a.meta?.tracestate ?? null];
  `;
  const traced = async (meta?: Record<string, string>) => {
    const result = (await c.client.callTool({
      name: "execute_code",
      arguments: { code: SNIPPET },
      ...(meta ? { _meta: meta } : {}),
    })) as { content: { type: string; text?: string }[] };
    return JSON.parse(result.content[0]?.text ?? "{}").value as [string, string, string | null];
  };

  it("sends each upstream call of a run as a child span of the request's traceparent, tracestate kept", async () => {
    const [first, second, state] = await traced({ traceparent: INCOMING, tracestate: "vendor=1" });
    for (const sent of [first, second]) {
      const [, trace, parent, flags] = TRACEPARENT.exec(sent) ?? [];
      expect(trace).toBe("0af7651916cd43dd8448eb211c80319c");
      expect(flags).toBe("01");
      expect(parent).not.toBe("b7ad6b7169203331");
    }
    expect(first).not.toBe(second);
    expect(state).toBe("vendor=1");
  });

  it("mints one trace per call without one, and ignores a malformed traceparent", async () => {
    for (const meta of [undefined, { traceparent: "00-zz-b7ad6b7169203331-01" }]) {
      const [first, second] = await traced(meta);
      const [again] = await traced(meta);
      const trace = (s: string) => TRACEPARENT.exec(s)?.[1];
      expect(trace(first)).toBeDefined();
      expect(trace(second)).toBe(trace(first));
      expect(trace(again)).not.toBe(trace(first));
    }
  });
});
