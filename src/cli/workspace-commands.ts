// Workspace commands: import, export, find, inspect, resume, delete, prune. Each mirrors its tool; --json prints the
// tool's reply (or {"error":{code,message}} and exit 1), otherwise a short human summary.
import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import cliProgress from "cli-progress";
import type { Command } from "commander";
import type { App } from "../app.js";
import { ExitError, openApp, reportFailure } from "./common.js";

interface JsonOption {
  json?: boolean;
}

const int = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new Error(`not an integer: ${value}`);
  return n;
};

/** Opens the app, runs `work`, prints its result, closes; failures become exit 1 (or 2 for usage). */
async function withWorkspace<T>(
  command: Command,
  json: boolean,
  work: (app: App) => Promise<T>,
  human: (result: T) => string,
): Promise<void> {
  const app = await openApp(command);
  try {
    const result = await work(app);
    process.stdout.write(json ? `${JSON.stringify(result, null, 2)}\n` : `${human(result)}\n`);
  } catch (error) {
    throw new ExitError(reportFailure(error, json));
  } finally {
    await app.close();
  }
}

function describeVersion(m: {
  name: string;
  version: number;
  artifact_id: string;
  kind: string;
  bytes: number;
}): string {
  return `${m.name} v${m.version} (${m.artifact_id}, ${m.kind}, ${m.bytes} bytes)`;
}

export function registerWorkspaceCommands(program: Command): void {
  program
    .command("import")
    .description("copy a local file into the workspace as a new version of NAME")
    .argument("<path>", "the file")
    .requiredOption("--name <name>", "artifact name")
    .option("--summary <text>", "what the file is")
    .option("--expected-version <n>", "current version of NAME (needed once it exists)", int)
    .option("--json", "print the reply as JSON")
    .action(
      async (
        path: string,
        options: JsonOption & { name: string; summary?: string; expectedVersion?: number },
        command: Command,
      ) => {
        const absolute = isAbsolute(path) ? path : resolve(process.cwd(), path);
        let bar: cliProgress.SingleBar | undefined;
        let size = 0;
        try {
          size = statSync(absolute).size;
        } catch {
          // The workspace reports the missing file with its own code.
        }
        if (process.stderr.isTTY && !options.json && size > 16 * 1024 * 1024) {
          bar = new cliProgress.SingleBar(
            { stream: process.stderr, format: "importing [{bar}] {percentage}% {value}/{total} MiB" },
            cliProgress.Presets.shades_classic,
          );
          bar.start(Math.ceil(size / 1048576), 0);
        }
        try {
          await withWorkspace(
            command,
            options.json ?? false,
            async (app) =>
              (await app.workspace()).import(
                {
                  path: absolute,
                  name: options.name,
                  summary: options.summary,
                  expected_version: options.expectedVersion,
                },
                { onProgress: (copied) => bar?.update(Math.floor(copied / 1048576)) },
              ),
            (m) => `imported ${describeVersion(m)}`,
          );
        } finally {
          bar?.stop();
        }
      },
    );

  program
    .command("export")
    .description(
      "write the bytes of a version (a name or ws_ id) to PATH; an existing file is replaced only with --force, " +
        "and a symlink, FIFO, device or directory never",
    )
    .argument("<ref>")
    .argument("<path>")
    .option("--force", "replace an existing regular file (keeping its permissions)")
    .option("--json", "print the reply as JSON")
    .action(async (ref: string, path: string, options: JsonOption & { force?: boolean }, command: Command) => {
      const absolute = isAbsolute(path) ? path : resolve(process.cwd(), path);
      await withWorkspace(
        command,
        options.json ?? false,
        async (app) => (await app.workspace()).export(ref, absolute, { force: options.force ?? false }),
        (r) => `exported ${r.name} v${r.version} (${r.bytes} bytes) to ${r.path}`,
      );
    });

  program
    .command("find")
    .description("search the current versions (names, summaries, sources, text)")
    .argument("<text>")
    .option("--limit <n>", "most results", int)
    .option("--json", "print the reply as JSON")
    .action(async (text: string, options: JsonOption & { limit?: number }, command: Command) => {
      await withWorkspace(
        command,
        options.json ?? false,
        async (app) => (await app.workspace()).find({ text, limit: options.limit }),
        (r) =>
          r.results.length === 0
            ? "no match"
            : r.results
                .map((m) => `${describeVersion(m)}${m.stale ? " [stale]" : ""}\n    ${m.snippet.replace(/\s+/g, " ")}`)
                .join("\n"),
      );
    });

  program
    .command("inspect")
    .description("metadata, staleness and a page of text of a version")
    .argument("<ref>")
    .option("--excerpt-bytes <n>", "bytes of text (max 8192)", int)
    .option("--offset <n>", "byte offset (the previous next_offset)", int)
    .option("--full", "every metadata field")
    .option("--json", "print the reply as JSON")
    .action(
      async (
        ref: string,
        options: JsonOption & { excerptBytes?: number; offset?: number; full?: boolean },
        command: Command,
      ) => {
        await withWorkspace(
          command,
          options.json ?? false,
          async (app) =>
            (await app.workspace()).inspect({
              ref,
              excerpt_bytes: options.excerptBytes,
              offset: options.offset,
              full: options.full,
            }),
          (r) => {
            const m = r as unknown as Record<string, unknown> & {
              name: string;
              version: number;
              artifact_id: string;
              kind: string;
              bytes: number;
            };
            const head = `${describeVersion(m)}${m.stale ? ` [stale: ${JSON.stringify(m.stale_inputs)}]` : ""}`;
            const more =
              m.next_offset === null || m.next_offset === undefined ? "" : `\n[more: --offset ${m.next_offset}]`;
            return `${head}\n${typeof m.excerpt === "string" ? m.excerpt : (m.note ?? "")}${more}`;
          },
        );
      },
    );

  program
    .command("resume")
    .description("open a checkpoint by name, id or namespace, with previews of what it pins")
    .argument("<text>")
    .option("--json", "print the reply as JSON")
    .action(async (text: string, options: JsonOption, command: Command) => {
      await withWorkspace(
        command,
        options.json ?? false,
        async (app) => (await app.workspace()).resume({ text }),
        (r) => {
          if ("candidates" in r)
            return `${r.message}\n${r.candidates.map((c) => `  ${c.name} v${c.version}: ${c.objective ?? ""}`).join("\n")}`;
          const cp = r.checkpoint;
          const lines = [`${cp.name} v${cp.version}`, `objective: ${cp.objective}`];
          if (cp.verified) lines.push(`verified: ${cp.verified}`);
          if (cp.next_step) lines.push(`next step: ${cp.next_step}`);
          if (cp.notes) lines.push(`notes: ${cp.notes}`);
          for (const a of r.artifacts) lines.push(`pins ${describeVersion(a)}`);
          return lines.join("\n");
        },
      );
    });

  program
    .command("delete")
    .description("delete one superseded version (ws_ id) or every version of a name")
    .argument("<ref>")
    .option("--expected-version <n>", "current version, when deleting a name", int)
    .option("--json", "print the reply as JSON")
    .action(async (ref: string, options: JsonOption & { expectedVersion?: number }, command: Command) => {
      await withWorkspace(
        command,
        options.json ?? false,
        async (app) => (await app.workspace()).delete({ ref, expected_version: options.expectedVersion }),
        (r) =>
          `deleted ${r.deleted.map((d) => `${d.name} v${d.version}`).join(", ")}; ${r.bytes_freed} bytes freed` +
          (r.cleanup_pending.length > 0 ? `; ${r.cleanup_pending.length} blob(s) left for the next prune` : ""),
      );
    });

  program
    .command("prune")
    .description("remove superseded versions nothing pins, to a fixed point")
    .option("--keep <n>", "newest versions kept per name", int)
    .option("--dry-run", "list what would be removed")
    .option("--json", "print the reply as JSON")
    .action(async (options: JsonOption & { keep?: number; dryRun?: boolean }, command: Command) => {
      await withWorkspace(
        command,
        options.json ?? false,
        async (app) => (await app.workspace()).prune({ keep: options.keep, dry_run: options.dryRun }),
        (r) =>
          `${r.dry_run ? "would remove" : "removed"} ${r.removed.length} version(s), ${r.bytes_freed} bytes` +
          (r.cleanup_pending.length > 0 ? `; ${r.cleanup_pending.length} blob(s) pending clean-up` : ""),
      );
    });

  program
    .command("query")
    .description("run one read-only SQL statement over CSV/Parquet/JSON artifacts (input1..inputN)")
    .argument("<sql>")
    .requiredOption("--input <refs...>", "artifacts, in order: input1, input2, ...")
    .option("--param <values...>", "values bound to ? (JSON when they parse, else strings)")
    .option("--save-as <name>", "save the full result as a Parquet version of NAME")
    .option("--expected-version <n>", "current version of the --save-as name, once it exists", int)
    .option("--allow-historical", "query inputs that are no longer current")
    .option("--json", "print the reply as JSON")
    .action(
      async (
        sql: string,
        options: JsonOption & {
          input: string[];
          param?: string[];
          saveAs?: string;
          expectedVersion?: number;
          allowHistorical?: boolean;
        },
        command: Command,
      ) => {
        const parameters = options.param?.map((p) => {
          try {
            return JSON.parse(p) as unknown;
          } catch {
            return p;
          }
        });
        // A long query shows it is alive on a terminal (stderr, so piped output stays clean).
        const started = Date.now();
        const ticker =
          process.stderr.isTTY && !options.json
            ? setInterval(
                () => process.stderr.write(`\rquerying… ${((Date.now() - started) / 1000).toFixed(1)} s`),
                500,
              )
            : undefined;
        const stopTicker = () => {
          if (ticker === undefined) return;
          clearInterval(ticker);
          process.stderr.write("\r\x1b[K");
        };
        await withWorkspace(
          command,
          options.json ?? false,
          async (app) =>
            (await app.sql())
              .query({
                inputs: options.input,
                sql,
                parameters,
                save_as: options.saveAs,
                expected_version: options.expectedVersion,
                allow_historical: options.allowHistorical,
              })
              .finally(stopTicker),
          (r) => {
            const header = r.columns.map((c) => c.name);
            const lines = [header.join("\t"), ...r.rows.map((row) => header.map((h) => formatCell(row[h])).join("\t"))];
            lines.push(
              `(${r.row_count} row${r.row_count === 1 ? "" : "s"}${r.truncated ? `, ${r.rows.length} shown` : ""})`,
            );
            if (r.saved) lines.push(`saved ${describeVersion(r.saved)}`);
            return lines.join("\n");
          },
        );
      },
    );

  program
    .command("describe")
    .description("exact column names and SQL types of table artifacts")
    .argument("<refs...>")
    .option("--json", "print the reply as JSON")
    .action(async (refs: string[], options: JsonOption, command: Command) => {
      await withWorkspace(
        command,
        options.json ?? false,
        async (app) => (await app.sql()).describe({ inputs: refs }),
        (r) =>
          r.inputs
            .map(
              (d) =>
                `${d.input} = ${d.name} v${d.version}\n${d.columns.map((c) => `  ${c.name} ${c.type}`).join("\n")}`,
            )
            .join("\n"),
      );
    });

  program
    .command("refresh")
    .description("re-run a saved query on the current versions of its inputs")
    .argument("<ref>")
    .option("--expected-version <n>", "current version of its name", int)
    .option("--json", "print the reply as JSON")
    .action(async (ref: string, options: JsonOption & { expectedVersion?: number }, command: Command) => {
      await withWorkspace(
        command,
        options.json ?? false,
        async (app) => (await app.sql()).refresh({ ref, expected_version: options.expectedVersion }),
        (r) => `refreshed ${r.saved ? describeVersion(r.saved) : ref} (${r.row_count} rows)`,
      );
    });
}

function formatCell(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}
