// `cairn upstream check URL|SERVER`: connects to one upstream exactly as Cairn's server does (the same connection,
// bounds and OAuth client), lists its tools and calls one, and says what happened. The MCP conformance suite's
// client scenarios drive it (`--auth headless`, decision 0241).
import type { Command } from "commander";
import type { ServerConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { EXIT_FAILURE, ExitError, globalOptions, reportFailure } from "./common.js";

interface CheckOptions {
  auth?: string;
  tool?: string;
  args: string;
  clientId?: string;
  clientSecretEnv?: string;
  clientMetadataUrl?: string;
  scopes?: string;
  timeout: string;
  json?: boolean;
}

interface CheckReport {
  target: string;
  url: string;
  auth: string;
  status: string;
  /** The MCP version the upstream speaks to Cairn (2026-07-28, or the 2025 one it fell back to). */
  protocol?: string;
  signed_in?: boolean;
  tools?: string[];
  called?: { tool: string; is_error: boolean; text: string };
  error?: { code: string; message: string };
}

const AUTH_MODES = ["none", "oauth", "headless"] as const;
const TEXT_PREVIEW_CHARS = 500;

export function registerUpstream(program: Command): void {
  const upstream = program.command("upstream").description("check the upstream MCP servers Cairn connects to");
  upstream
    .command("check")
    .description("connect to one upstream as Cairn would, list its tools and call one; print what happened")
    .argument("<target>", "a Streamable HTTP URL, or the NAME of a [servers.NAME] in cairn.toml")
    .option(
      "--auth <mode>",
      '"oauth": sign in through your browser; "headless": follow the authorization redirects with an HTTP client instead of a browser (for tests only: it works with servers that approve without a person); "none"',
    )
    .option("--tool <name>", "the tool to call (default: the first one marked read-only; none called if none is)")
    .option("--args <json>", "the arguments of the call, a JSON object", "{}")
    .option("--client-id <id>", "a pre-registered OAuth client id (default: dynamic registration)")
    .option("--client-secret-env <var>", "the environment variable holding that client's secret")
    .option("--client-metadata-url <url>", "an HTTPS client metadata document URL to use as client id")
    .option("--scopes <list>", "space-separated scopes to ask for when the server names none")
    .option("--timeout <seconds>", "deadline of the connection (a sign-in included) and of the call", "60")
    .option("--json", "print {target, url, auth, status, protocol, signed_in, tools, called, error}")
    .addHelpText(
      "after",
      "\nA URL is checked with a sign-in kept in memory for this run only; a configured NAME uses its cairn.toml" +
        "\nentry and its stored tokens (without --auth, as cairn serve would: AUTH_REQUIRED when not signed in)." +
        "\nExit status 0 when the connection and the call succeeded, 1 otherwise.",
    )
    .action(async (target: string, options: CheckOptions, command: Command) => {
      const json = options.json === true;
      let report: CheckReport;
      try {
        report = await check(command, target, options);
      } catch (error) {
        throw new ExitError(reportFailure(error, json));
      }
      process.stdout.write(json ? `${JSON.stringify(report)}\n` : `${describe(report)}\n`);
      if (report.error !== undefined || report.called?.is_error === true) throw new ExitError(EXIT_FAILURE);
    });
}

async function check(command: Command, target: string, options: CheckOptions): Promise<CheckReport> {
  const mode = options.auth ?? "none";
  if (!(AUTH_MODES as readonly string[]).includes(mode)) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `--auth must be one of ${AUTH_MODES.join(", ")}: pass e.g. --auth oauth`,
    );
  }
  const timeoutMs = Number(options.timeout) * 1000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1000 || timeoutMs > 3_600_000) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      "--timeout must be whole seconds from 1 to 3600: pass e.g. --timeout 60",
    );
  }
  const args = parseArgs(options.args);
  const [{ createLogger }, store, { CairnOAuthProvider }, loopback, { UpstreamConnection }] = await Promise.all([
    import("../log.js"),
    import("../upstream/oauth-store.js"),
    import("../upstream/oauth-provider.js"),
    import("../upstream/oauth-loopback.js"),
    import("../upstream/upstream-connection.js"),
  ]);
  const { name, config, configured } = await resolveTarget(command, target, options, mode);
  const interactive = mode === "oauth" || mode === "headless";
  const log = createLogger("upstream");
  const interaction =
    interactive && !("command" in config)
      ? await loopback.startLoopback({
          server: name,
          port: config.redirect_port,
          mode: mode === "headless" ? "headless" : "browser",
          timeoutMs,
          say: (line) => process.stderr.write(`${line}\n`),
        })
      : undefined;
  let provider: InstanceType<typeof CairnOAuthProvider> | undefined;
  const connection = new UpstreamConnection(
    name,
    { ...config, timeout_ms: timeoutMs, startup_timeout_ms: timeoutMs },
    {
      connectTimeoutMs: timeoutMs,
      log,
      closed: () => false,
      changed: () => {},
      oauthProvider: (server, http) => {
        provider = new CairnOAuthProvider({
          server,
          config: http,
          store: configured
            ? new store.FileOAuthStore(store.oauthDir(), server, http.url)
            : new store.MemoryOAuthStore(http.url),
          ...(interaction === undefined ? {} : { interaction }),
        });
        return provider;
      },
    },
  );
  const url = "url" in config ? config.url : config.command;
  const configuredAuth = "url" in config ? (config.auth ?? "none") : "none";
  const report: CheckReport = { target, url, auth: mode === "none" ? configuredAuth : mode, status: "unavailable" };
  try {
    await connection.connect();
    const state = connection.state();
    report.status = state.status;
    if (state.status !== "ready") {
      report.error = connection.unavailable().toJSON();
      return report;
    }
    const protocol = connection.protocolVersion();
    if (protocol !== undefined) report.protocol = protocol;
    report.tools = state.tools.map((tool) => tool.name);
    const tool = options.tool ?? state.tools.find((t) => t.annotations?.readOnlyHint === true)?.name;
    if (tool === undefined) return report;
    try {
      const result = await connection.call(tool, args, timeoutMs, undefined);
      const text = result.content
        .map((part) => (part.type === "text" ? part.text : `[${part.type}]`))
        .join("\n")
        .slice(0, TEXT_PREVIEW_CHARS);
      report.called = { tool, is_error: result.isError === true, text };
    } catch (error) {
      const cairnError = error instanceof CairnError ? error : new CairnError(ErrorCode.TOOL_FAILED, String(error));
      report.error = cairnError.toJSON();
    }
    if (provider) report.signed_in = provider.signIns > 0 || (await provider.tokens()) !== undefined;
    return report;
  } finally {
    await connection.close();
    await interaction?.close();
  }
}

/** The server to check: a configured NAME as written in cairn.toml, or a URL with the flags' OAuth settings. */
async function resolveTarget(
  command: Command,
  target: string,
  options: CheckOptions,
  mode: string,
): Promise<{ name: string; config: ServerConfig; configured: boolean }> {
  const { HttpServerConfigSchema, SERVER_NAME_PATTERN } = await import("../config/schema.js");
  if (SERVER_NAME_PATTERN.test(target) && !target.includes(":")) {
    const { loadConfig } = await import("../config/load.js");
    const global = globalOptions(command);
    const { config } = loadConfig({ configPath: global.config, workspace: global.workspace });
    const server = config.servers[target];
    if (server === undefined) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `no server "${target}" in the configuration (servers: ${Object.keys(config.servers).join(", ") || "none"}): pass its URL, or check --config`,
      );
    }
    const withAuth = mode === "none" || "command" in server ? server : { ...server, auth: "oauth" as const };
    return { name: target, config: withAuth, configured: true };
  }
  let secret: string | undefined;
  if (options.clientSecretEnv !== undefined) {
    secret = process.env[options.clientSecretEnv];
    if (!secret) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `--client-secret-env ${options.clientSecretEnv}: that variable is not set: export it, then run again`,
      );
    }
  }
  const oauth = mode !== "none";
  const parsed = HttpServerConfigSchema.safeParse({
    url: target,
    ...(oauth ? { auth: "oauth" } : {}),
    ...(options.clientId === undefined ? {} : { client_id: options.clientId }),
    ...(secret === undefined ? {} : { client_secret: secret }),
    ...(options.clientMetadataUrl === undefined ? {} : { client_metadata_url: options.clientMetadataUrl }),
    ...(options.scopes === undefined ? {} : { scopes: options.scopes.split(/\s+/).filter(Boolean) }),
  });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".") || "url"}: ${issue.message}`);
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `cannot check ${JSON.stringify(target)}: ${problems.join("; ")}: pass an http(s) URL or a configured server name (OAuth flags need --auth oauth or headless)`,
    );
  }
  return { name: "upstream", config: parsed.data, configured: false };
}

function parseArgs(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `--args is not JSON: pass an object, e.g. --args '{"q":"x"}'`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `--args must be a JSON object: pass e.g. --args '{"q":"x"}'`);
  }
  return value as Record<string, unknown>;
}

function describe(report: CheckReport): string {
  const speaks = report.protocol === undefined ? "" : `, MCP ${report.protocol}`;
  const lines = [`${report.target}: ${report.status}${speaks}${report.signed_in ? " (signed in)" : ""}`];
  if (report.tools) lines.push(`tools (${report.tools.length}): ${report.tools.join(", ") || "none"}`);
  if (report.called) {
    lines.push(`called ${report.called.tool}: ${report.called.is_error ? "error result" : "ok"}`);
    if (report.called.text) lines.push(report.called.text);
  } else if (report.tools && !report.error) {
    lines.push("no tool called: none is marked read-only; name one with --tool");
  }
  if (report.error) lines.push(`${report.error.code}: ${report.error.message}`);
  return lines.join("\n");
}
