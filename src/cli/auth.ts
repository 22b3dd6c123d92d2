// `cairn auth login|status|logout`: the user's sign-ins to OAuth upstreams (`auth = "oauth"` in cairn.toml). Tokens
// live in private files under $CAIRN_OAUTH_DIR (default ~/.cairn/oauth); nothing here ever prints one.
import type { Command } from "commander";
import type { HttpServerConfig, ServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { redactSecrets } from "../log.js";
import { EXIT_USAGE, ExitError, globalOptions, reportFailure } from "./common.js";

/** One line of `cairn auth status`: never a token, a secret or a client secret. */
export interface AuthStatus {
  server: string;
  url: string;
  signed_in: boolean;
  /** ISO time the access token expires, when the server said. */
  expires_at?: string;
  expired?: boolean;
  refreshable: boolean;
  scope?: string;
  signed_in_at?: string;
  file: string;
}

export function registerAuth(program: Command): void {
  const auth = program
    .command("auth")
    .description('sign in to upstream servers that use OAuth (auth = "oauth"): login, status, logout');
  auth
    .command("login")
    .description("sign in to SERVER in your browser (OAuth authorization code with PKCE, loopback redirect)")
    .argument("<server>", 'a [servers.NAME] with auth = "oauth"')
    .option("--no-browser", "print the sign-in URL only; open it yourself (on this machine: the redirect is loopback)")
    .option("--timeout <seconds>", "how long to wait for the sign-in to complete", "300")
    .option("--json", "print {server, signed_in, tools, expires_at, refreshable, file}")
    .addHelpText(
      "after",
      "\nCairn listens on 127.0.0.1 (a free port, or redirect_port) for the redirect, registers itself with the" +
        "\nserver when it supports dynamic registration (else set client_id), exchanges the code and stores the" +
        "\ntokens in a private file (0600). Servers refresh them from then on; run this again when a call answers" +
        "\nAUTH_REQUIRED.",
    )
    .action(async (server: string, options: { browser: boolean; timeout: string; json?: boolean }, command) => {
      await run(options.json === true, async () => {
        const timeoutMs = seconds(options.timeout, "--timeout");
        const { config, store } = await oauthServer(command, server);
        const { signIn } = await import("../upstream/oauth-login.js");
        const result = await signIn({
          server,
          config,
          store,
          mode: options.browser ? "browser" : "print",
          timeoutMs,
          say: (line) => process.stderr.write(`${line}\n`),
        });
        const status = statusOf(server, config, store);
        const output = { ...status, tools: result.tools };
        if (!result.signedIn) {
          return {
            output: { ...output, signed_in: false },
            text: `server "${server}" answered without asking for a sign-in (${result.tools} tools): nothing was stored`,
          };
        }
        const expiry = status.expires_at === undefined ? "" : `, token valid until ${status.expires_at}`;
        return {
          output,
          text: `signed in to "${server}" (${result.tools} tools${expiry}${status.refreshable ? ", refreshed automatically" : ""}); stored in ${status.file}`,
        };
      });
    });
  auth
    .command("status")
    .description("which servers use OAuth, whether you are signed in, when the token expires (never the token)")
    .argument("[server]", 'one server (default: every server with auth = "oauth")')
    .option("--json", "print [{server, url, signed_in, expires_at, expired, refreshable, scope, signed_in_at, file}]")
    .action(async (server: string | undefined, options: { json?: boolean }, command) => {
      await run(options.json === true, async () => {
        const servers = await oauthServers(command, server);
        const rows = servers.map(({ name, config, store }) => statusOf(name, config, store));
        const text =
          rows.length === 0 ? 'no server in cairn.toml has auth = "oauth"' : rows.map(describeStatus).join("\n");
        return { output: rows, text };
      });
    });
  auth
    .command("logout")
    .description("forget the tokens of SERVER (revoked at the server first when it offers revocation)")
    .argument("<server>", 'a [servers.NAME] with auth = "oauth"')
    .option("--json", "print {server, removed, revocation}")
    .action(async (server: string, options: { json?: boolean }, command) => {
      await run(options.json === true, async () => {
        const { store } = await oauthServer(command, server);
        const { revokeAndForget } = await import("../upstream/oauth-login.js");
        const result = await revokeAndForget(store);
        return {
          output: { server, ...result },
          text: result.removed
            ? `signed out of "${server}" (revocation: ${result.revocation})`
            : `not signed in to "${server}": nothing to remove`,
        };
      });
    });
}

interface OAuthServer {
  name: string;
  config: HttpServerConfig;
  store: import("../upstream/oauth-store.js").FileOAuthStore;
}

/** The configured OAuth servers (one, or all), each with its token file. */
async function oauthServers(command: Command, only: string | undefined): Promise<OAuthServer[]> {
  const options = globalOptions(command);
  const [{ loadConfig }, { FileOAuthStore, oauthDir }, { notOAuth }] = await Promise.all([
    import("../config/load.js"),
    import("../upstream/oauth-store.js"),
    import("../upstream/oauth-login.js"),
  ]);
  const { config } = loadConfig({ configPath: options.config, workspace: options.workspace });
  const dir = oauthDir();
  const entries = Object.entries(config.servers) as [string, ServerConfig][];
  if (only !== undefined) {
    const found = config.servers[only];
    if (found === undefined) {
      const names = entries.map(([name]) => name).join(", ") || "none";
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `no server "${only}" in the configuration (servers: ${names}): check the name, or --config`,
      );
    }
    if (!isOAuth(found)) throw notOAuth(only);
  }
  return entries
    .filter((entry): entry is [string, HttpServerConfig] => isOAuth(entry[1]))
    .filter(([name]) => only === undefined || name === only)
    .map(([name, server]) => ({ name, config: server, store: new FileOAuthStore(dir, name, server.url) }));
}

async function oauthServer(command: Command, name: string): Promise<OAuthServer> {
  const [found] = await oauthServers(command, name);
  if (!found) throw new CairnError(ErrorCode.INTERNAL, `server "${name}" vanished from the configuration`);
  return found;
}

function isOAuth(server: ServerConfig): server is HttpServerConfig {
  return "url" in server && server.auth === "oauth";
}

function statusOf(name: string, config: HttpServerConfig, store: OAuthServer["store"]): AuthStatus {
  const record = store.read();
  const tokens = record?.tokens;
  const expiresAt = record?.expires_at;
  return {
    server: name,
    url: config.url,
    signed_in: tokens !== undefined,
    ...(expiresAt === undefined
      ? {}
      : { expires_at: new Date(expiresAt).toISOString(), expired: expiresAt <= Date.now() }),
    refreshable: tokens?.refresh_token !== undefined,
    ...(tokens?.scope === undefined ? {} : { scope: tokens.scope }),
    ...(record?.signed_in_at === undefined ? {} : { signed_in_at: new Date(record.signed_in_at).toISOString() }),
    file: store.location,
  };
}

function describeStatus(row: AuthStatus): string {
  if (!row.signed_in) return `${row.server}  not signed in: run cairn auth login ${row.server}  (${row.url})`;
  const expiry =
    row.expires_at === undefined ? "no expiry given" : `${row.expired ? "expired" : "expires"} ${row.expires_at}`;
  const refresh = row.refreshable ? "refreshable" : "not refreshable: sign in again when it expires";
  return `${row.server}  signed in, ${expiry}, ${refresh}${row.scope ? `, scope "${row.scope}"` : ""}  (${row.url})`;
}

function seconds(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 3600) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `${flag} must be whole seconds from 1 to 3600: pass e.g. ${flag} 300`,
    );
  }
  return n * 1000;
}

/** Runs a subcommand: prints its text (or JSON) on stdout, or its failure, and sets the exit code. */
async function run(json: boolean, body: () => Promise<{ output: unknown; text: string }>): Promise<void> {
  try {
    const { output, text } = await body();
    // Nothing here holds a credential by construction; a token or secret that slipped in would still be cut.
    process.stdout.write(redactSecrets(json ? `${JSON.stringify(output)}\n` : `${text}\n`));
  } catch (error) {
    if (error instanceof CairnError && error.code === ErrorCode.CONFIG_INVALID && !json) {
      process.stderr.write(`cairn: invalid configuration\n${error.message}\n`);
      throw new ExitError(EXIT_USAGE);
    }
    throw new ExitError(reportFailure(error, json));
  }
}
