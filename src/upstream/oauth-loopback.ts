// The loopback redirect of a sign-in (RFC 8252): a listener on 127.0.0.1 that takes exactly one authorization code
// whose state matches, and the ways to reach the authorization URL: the user's browser, the printed URL only, or,
// for tests only, an HTTP client that follows the server's redirects back to the listener ("headless").
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { CairnError, ErrorCode } from "../errors.js";
import { registerCredential } from "../log.js";
import { ENDPOINT_RULE, unsafeAddress } from "./oauth-guards.js";
import type { AuthorizationResponse, OAuthInteraction } from "./oauth-provider.js";

/** How the authorization URL is opened. */
export type OpenMode = "browser" | "print" | "headless";

/** A sign-in waits this long for the redirect by default. */
export const DEFAULT_SIGN_IN_TIMEOUT_MS = 300_000;
const CALLBACK_PATH = "/callback";
/** Redirects a headless sign-in follows at most before the loopback. */
const MAX_HEADLESS_HOPS = 10;

export interface LoopbackOptions {
  server: string;
  /** A fixed port (a client registered with one), else any free port. */
  port?: number | undefined;
  mode: OpenMode;
  /** @default DEFAULT_SIGN_IN_TIMEOUT_MS */
  timeoutMs?: number;
  /** Where the URL and progress lines go (stderr in the CLI). */
  say: (line: string) => void;
}

export interface LoopbackInteraction extends OAuthInteraction {
  close(): Promise<void>;
}

interface Pending {
  state: string | null;
  resolve: (response: AuthorizationResponse) => void;
  reject: (error: Error) => void;
}

/** Listens on 127.0.0.1 and returns the interaction a provider signs in with; close() ends the listener. */
export async function startLoopback(options: LoopbackOptions): Promise<LoopbackInteraction> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_SIGN_IN_TIMEOUT_MS;
  let pending: Pending | undefined;
  const http: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method !== "GET" || url.pathname !== CALLBACK_PATH) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    const page = (status: number, text: string) =>
      res
        .writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
        .end(`<!doctype html><title>Cairn</title><p>${text}</p>\n`);
    // A redirect without the state of the sign-in waiting is not its answer (another tab, a forged link).
    if (!pending || url.searchParams.get("state") !== pending.state) {
      page(400, "This sign-in link is not the one Cairn is waiting for.");
      return;
    }
    const current = pending;
    pending = undefined;
    const error = url.searchParams.get("error");
    const code = url.searchParams.get("code");
    if (error !== null || code === null) {
      page(400, "The sign-in was not completed. You can close this tab.");
      const described = url.searchParams.get("error_description");
      current.reject(
        new CairnError(
          ErrorCode.AUTH_REQUIRED,
          `the authorization server of "${options.server}" answered ${error ?? "no code"}${described ? ` (${described.slice(0, 200)})` : ""}: run cairn auth login ${options.server} again`,
          { data: { server: options.server } },
        ),
      );
      return;
    }
    // A code is one use and short-lived, but still a credential until exchanged.
    registerCredential(code);
    page(200, "Cairn is signed in. You can close this tab.");
    // RFC 9207: the issuer is checked by the provider, against the one it recorded, before the code is redeemed.
    const iss = url.searchParams.get("iss");
    current.resolve({ code, ...(iss === null ? {} : { iss }) });
  });
  await new Promise<void>((ready, fail) => {
    http.once("error", fail);
    http.listen(options.port ?? 0, "127.0.0.1", () => ready());
  }).catch((error: NodeJS.ErrnoException) => {
    throw new CairnError(
      ErrorCode.AUTH_REQUIRED,
      `cannot listen on 127.0.0.1:${options.port ?? 0} for the sign-in's redirect (${error.code ?? error.message}): free that port, or change redirect_port of [servers.${options.server}]`,
      { data: { server: options.server } },
    );
  });
  const port = (http.address() as AddressInfo).port;
  const redirectUrl = `http://127.0.0.1:${port}${CALLBACK_PATH}`;

  return {
    redirectUrl,
    async authorize(authorizationUrl) {
      const unsafe = unsafeAddress(authorizationUrl);
      if (unsafe !== undefined) {
        throw new CairnError(
          ErrorCode.AUTH_REQUIRED,
          `the authorization server of "${options.server}" gave a sign-in address that is ${unsafe}, so nothing was opened: ` +
            `${ENDPOINT_RULE}; check the url of [servers.${options.server}] in cairn.toml`,
          { data: { server: options.server, protocol: authorizationUrl.protocol } },
        );
      }
      const code = new Promise<AuthorizationResponse>((resolve, reject) => {
        pending = { state: authorizationUrl.searchParams.get("state"), resolve, reject };
      });
      options.say(`Sign in to "${options.server}" at:\n  ${authorizationUrl.href}`);
      if (options.mode === "browser") openBrowser(authorizationUrl.href);
      const followed = options.mode === "headless" ? followHeadless(authorizationUrl, redirectUrl) : undefined;
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new CairnError(
                ErrorCode.AUTH_REQUIRED,
                `the sign-in to "${options.server}" did not complete within ${Math.round(timeoutMs / 1000)} s: run cairn auth login ${options.server} again (--timeout raises the wait)`,
                { data: { server: options.server } },
              ),
            ),
          timeoutMs,
        );
      });
      try {
        return await Promise.race([code, deadline, ...(followed ? [followed.then(() => code)] : [])]);
      } finally {
        clearTimeout(timer);
        pending = undefined;
      }
    },
    close: () =>
      new Promise<void>((done) => {
        http.closeAllConnections();
        http.close(() => done());
      }),
  };
}

/**
 * Tests only: GETs the authorization URL and follows its redirects (at most MAX_HEADLESS_HOPS) until one leads to
 * the loopback listener, which it then requests like a browser would. Rejects when the chain ends elsewhere.
 */
async function followHeadless(start: URL, redirectUrl: string): Promise<void> {
  let url = start;
  for (let hop = 0; hop <= MAX_HEADLESS_HOPS; hop++) {
    const response = await fetch(url, { redirect: "manual" });
    await response.body?.cancel();
    if (url.href.startsWith(redirectUrl)) return;
    const location = response.headers.get("location");
    if (response.status < 300 || response.status >= 400 || location === null) {
      throw new CairnError(
        ErrorCode.AUTH_REQUIRED,
        `headless sign-in: ${url.origin}${url.pathname} answered ${response.status} without a redirect: this server needs a person to sign in; run cairn auth login without headless`,
      );
    }
    url = new URL(location, url);
  }
  throw new CairnError(
    ErrorCode.AUTH_REQUIRED,
    `headless sign-in: more than ${MAX_HEADLESS_HOPS} redirects: run cairn auth login without headless`,
  );
}

/** Opens `url` in the user's browser; a failure is silent, since the URL is printed too. */
function openBrowser(url: string): void {
  const [command, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["rundll32", ["url.dll,FileProtocolHandler", url]]
        : ["xdg-open", [url]];
  try {
    const child = spawn(command as string, args as string[], { stdio: "ignore", detached: true });
    child.on("error", () => {});
    child.unref();
  } catch {
    // No opener on this machine: the printed URL remains.
  }
}
