// The content of cairn://namespace: what a snippet can reach (upstream namespaces, allow-listed programs, the
// built-ins with their signatures) and the limits in force. Store built-ins and operations give their own
// signatures; nothing here restates one.

import { STORE_BUILTINS, storeSignature } from "../codemode/store-bindings.js";
import type { Config } from "../config/schema.js";
import { signatureOf } from "../operations/fields.js";
import type { Operation } from "../operations/operation.js";

export interface NamespaceSources {
  config: Config;
  version: string;
  /** The executor's kind ("quickjs" or "node"). */
  executorKind: string;
  operations: readonly Operation[];
  /** Each configured upstream server now. */
  upstreams(): readonly { server: string; status: string; cause?: string | undefined; tools: readonly unknown[] }[];
  /** Allow-listed programs by name (empty unless cli.mode is "allowlist"). */
  programs(): string[];
}

export function namespaceContent(sources: NamespaceSources): unknown {
  const { config, operations } = sources;
  return {
    server: "cairn",
    version: sources.version,
    namespaces: sources.upstreams().map(({ server, status, cause, tools }) => ({
      name: server,
      status,
      ...(cause === undefined ? {} : { cause }),
      tools: tools.length,
    })),
    cli: sources.programs(),
    builtins: [
      { name: "call_tool", signature: "call_tool(name: string, args?: object): Promise<unknown>" },
      ...STORE_BUILTINS.map((builtin) => ({ name: builtin.name, signature: storeSignature(builtin) })),
      { name: "inputs", signature: "inputs: object (the inputs argument of execute_code)" },
      { name: "console", signature: "console.log / info / warn / error / debug: captured into logs" },
      { name: "setTimeout", signature: "setTimeout(fn, ms) / clearTimeout(id): never past the run's deadline" },
      ...operations.flatMap((operation) =>
        operation.snippet
          ? [
              {
                name: operation.snippet.path,
                signature: `${operation.snippet.path}(${signatureOf(operation.input)}): ${operation.title}`,
              },
            ]
          : [],
      ),
      {
        name: "cli_run",
        signature:
          "cli_run(name, args: string[]): Promise<{exit_code, stdout, stderr}> (allow-listed programs; cli.NAME(...args) too)",
      },
    ],
    uris: {
      workspace: "cairn://workspace/{+name}",
      results: config.results.enabled ? "cairn://results/{handle}" : null,
      artifacts: config.artifacts.enabled ? "cairn://artifacts/{handle}" : null,
    },
    limits: {
      sandbox: {
        backend: sources.executorKind,
        ...pick(config.sandbox, [
          "timeout_ms",
          "memory_mb",
          "max_tool_calls",
          "max_log_chars",
          "max_workers",
          "max_queued",
        ]),
      },
      output: config.output,
      results: config.results,
      artifacts: config.artifacts,
    },
  };
}

function pick<T extends object, K extends keyof T>(object: T, keys: K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const key of keys) out[key] = object[key];
  return out;
}
