// Test helper: the built `cairn ui` (or `cairn serve --transport http --ui`) on a free loopback port, and raw HTTP
// requests to it with exactly the headers a test chooses (fetch would not let it set Host or Origin).
import { type ChildProcess, spawn } from "node:child_process";
import { request } from "node:http";
import { MAIN } from "./mcp-client.js";

export interface RunningView {
  child: ChildProcess;
  port: number;
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** The sign-in address `cairn ui` printed, when it printed one (a made token). */
  signInUrl: string | undefined;
  /** What the process wrote so far. */
  stdout(): string;
  stderr(): string;
  stop(): Promise<number | null>;
}

/**
 * Starts `cairn --workspace DIR ARGS...` and resolves once it prints where the view listens (`cairn ui` on stdout,
 * `serve --ui` on stderr); rejects with its output if it exits first.
 */
export function startView(
  workspace: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<RunningView> {
  const child = spawn(process.execPath, [MAIN, "--workspace", workspace, ...args], {
    env: { ...process.env, CAIRN_TOKEN: undefined, CAIRN_LOG: "error", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const check = () => {
      const printed =
        /web view (?:of workspace \S+(?: is at|:)|is at) (http:\/\/127\.0\.0\.1:(\d+))\/(\?token=\S+)?/.exec(
          `${out}\n${err}`,
        );
      if (printed === null) return;
      child.stdout?.off("data", onOut);
      child.stderr?.off("data", onErr);
      child.stdout?.on("data", (c: Buffer) => {
        out += c.toString();
      });
      child.stderr?.on("data", (c: Buffer) => {
        err += c.toString();
      });
      const origin = printed[1] as string;
      resolve({
        child,
        port: Number(printed[2]),
        origin,
        signInUrl: printed[3] === undefined ? undefined : `${origin}/${printed[3]}`,
        stdout: () => out,
        stderr: () => err,
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
          return exited;
        },
      });
    };
    const onOut = (c: Buffer) => {
      out += c.toString();
      check();
    };
    const onErr = (c: Buffer) => {
      err += c.toString();
      check();
    };
    child.stdout?.on("data", onOut);
    child.stderr?.on("data", onErr);
    child.once("exit", (code) => reject(new Error(`cairn exited ${code} before listening: ${out}${err}`)));
  });
}

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One request with exactly these headers (Host included: add it yourself, as a browser would send it), on a
 * connection of its own: a pooled keep-alive connection the server closes after its idle timeout (5 s) can be reused
 * at that very moment on a slow machine, and the request then fails with "socket hang up".
 */
export function rawRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method, headers, setHost: false, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}
