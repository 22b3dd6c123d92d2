// The commands of the operation table (save, find, inspect, query, import, export, prune, ...): arguments and flags
// come from each operation's input schema, the values are checked by that same schema, and --json prints the
// operation's answer (or {"error":{code,message}}) where the default is a short human summary.
import { type Command, Option } from "commander";
import { ConfigSchema } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";
import { type Field, fieldsOf } from "../operations/fields.js";
import type { Operation } from "../operations/operation.js";
import { operations } from "../operations/table.js";
import { checkArguments } from "../registry/arguments.js";
import { ExitError, openApp, reportFailure } from "./common.js";

/** Where a field comes from on the command line. */
interface Source {
  field: Field;
  /** `<name>` or `--flag`, as errors name it. */
  label: string;
  /** Commander's key for an option; absent for a positional argument. */
  attribute?: string;
  position?: number;
}

/**
 * Registers one command per operation with a `cli` exposure, or only the one named `only`. Texts come from the
 * built-in defaults.
 */
export function registerOperationCommands(program: Command, only?: string): void {
  for (const operation of operations(ConfigSchema.parse({}))) {
    if (operation.cli && (only === undefined || operation.name === only)) defineCommand(program, operation);
  }
}

function defineCommand(program: Command, operation: Operation): void {
  const cli = operation.cli as NonNullable<Operation["cli"]>;
  const text = operation.summary.replace(/`/g, "");
  // program.command() passes on the root's settings: exitOverride (usage errors exit 2), help after an error.
  const command = program.command(operation.name).description(text).summary(firstSentence(text));
  const positional: readonly string[] = cli.args ?? [];
  const omitted = new Set<string>(cli.omit ?? []);
  const flags = (cli.flags ?? {}) as Record<string, string>;
  const sources: Source[] = [];
  const fields = fieldsOf(operation.input);
  for (const name of positional) {
    const field = fields.find((f) => f.name === name) as Field;
    const variadic = field.kind === "array" ? "..." : "";
    command.argument(field.optional ? `[${name}${variadic}]` : `<${name}${variadic}>`, field.description);
    sources.push({ field, label: `<${name}>`, position: sources.length });
  }
  for (const field of fields) {
    if (positional.includes(field.name) || omitted.has(field.name)) continue;
    const flag = `--${flags[field.name] ?? field.name.replace(/_/g, "-")}`;
    const value = field.kind === "boolean" ? "" : field.kind === "array" ? " <values...>" : " <value>";
    const option = new Option(`${flag}${value}`, describe(field));
    if (field.choices) option.choices(field.choices);
    if (!field.optional) option.makeOptionMandatory();
    command.addOption(option);
    sources.push({ field, label: flag, attribute: option.attributeName() });
  }
  command.option("--json", "print the reply as JSON");
  command.action(async (...received: unknown[]) => {
    const self = received.at(-1) as Command;
    const options = self.opts<Record<string, unknown>>();
    const json = options.json === true;
    const app = await openApp(self);
    const progress = terminalProgress(operation.name, json);
    try {
      // The configured operation: its limits, not the defaults the help was built from.
      const configured = app.operations.find((o) => o.name === operation.name) as Operation;
      const raw: Record<string, unknown> = {};
      for (const source of sources) {
        const given = source.attribute === undefined ? received[source.position as number] : options[source.attribute];
        if (given !== undefined) raw[source.field.name] = fromText(given, source);
      }
      const labels = new Map(sources.map((s) => [s.field.name, s.label]));
      let args = checkArguments(configured.input, raw, `cairn ${operation.name}`, {
        label: (path) => [labels.get(String(path[0])) ?? String(path[0]), ...path.slice(1)].join("."),
      });
      if (cli.prepare) args = cli.prepare(args);
      // What is printed is what --max-tokens counts: the indented JSON or the summary, with the final newline.
      const printed = (output: unknown) =>
        json ? `${JSON.stringify(output, null, 2)}\n` : `${cli.human(output)}${omittedLine(output)}\n`;
      const output = await configured.handler(args, {
        actor: app.actor,
        services: app.services,
        session: app.newSession("cli"),
        surface: "cli",
        progress: progress.report,
        replyText: printed,
      });
      progress.stop();
      process.stdout.write(printed(output));
    } catch (error) {
      progress.stop();
      throw new ExitError(reportFailure(error, json));
    } finally {
      await app.close();
    }
  });
}

/** What a budget left out (`omitted: {results: 3, next_step}`), as the summary's last line; empty when nothing was. */
function omittedLine(output: unknown): string {
  const omitted = (output as { omitted?: Record<string, unknown> } | null)?.omitted;
  if (omitted === undefined || omitted === null || typeof omitted !== "object" || Array.isArray(omitted)) return "";
  const { next_step, ...counts } = omitted;
  const what = Object.entries(counts).map(([key, count]) => `${count} ${key.replace(/_/g, " ")}`);
  return `\n[omitted to fit --max-tokens: ${what.join(", ")}${typeof next_step === "string" ? `; ${next_step}` : ""}]`;
}

/**
 * The summary's first sentence, whole: it ends at a `.` or `;` followed by a space (or the end) outside parentheses
 * and brackets, never at a colon, which opens a clause (`approves one exact version (a name: its current one)`).
 */
export function firstSentence(text: string): string {
  let depth = 0;
  let end = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(" || c === "[" || c === "{") depth++;
    else if ((c === ")" || c === "]" || c === "}") && depth > 0) depth--;
    else if ((c === "." || c === ";") && depth === 0 && (i + 1 === text.length || /\s/.test(text[i + 1] as string))) {
      end = i;
      break;
    }
  }
  return text.slice(0, end).replace(/^./, (c) => c.toLowerCase());
}

function describe(field: Field): string {
  const kind =
    field.kind === "object"
      ? " (JSON)"
      : field.kind === "array" && (field.items === "unknown" || field.items === "object")
        ? " (JSON each)"
        : "";
  return `${field.description}${kind}`;
}

/** Command-line text to the value the schema checks: numbers, JSON objects; anything else stays as typed. */
function fromText(given: unknown, source: Source): unknown {
  const { field } = source;
  const convert = (text: string, kind: Field["kind"] | undefined): unknown => {
    if (kind === "number") return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text.trim()) ? Number(text) : text;
    if (kind === "object") {
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `${source.label} takes a JSON object (${(error as Error).message}): quote it, e.g. '{"objective":"..."}'`,
        );
      }
    }
    if (kind === "unknown") {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    }
    return text;
  };
  if (Array.isArray(given)) return given.map((item) => convert(String(item), field.items));
  if (typeof given === "string") return convert(given, field.kind);
  return given;
}

/**
 * On a terminal (and without --json): a progress bar for work that reports its bytes (an import of more than
 * 16 MiB), else a seconds counter once a call takes more than half a second; both on stderr, erased at the end.
 */
function terminalProgress(
  name: string,
  json: boolean,
): { report?: (done: number, total: number) => void; stop(): void } {
  if (!process.stderr.isTTY || json) return { stop() {} };
  const started = Date.now();
  let shown = false;
  let bar: { update(value: number): void; stop(): void } | undefined;
  let loading = false;
  let stopped = false;
  const ticker = setInterval(() => {
    if (bar || Date.now() - started < 500) return;
    shown = true;
    process.stderr.write(`\r${name}… ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 250);
  const stop = () => {
    stopped = true;
    clearInterval(ticker);
    bar?.stop();
    bar = undefined;
    if (shown) process.stderr.write("\r\x1b[K");
    shown = false;
  };
  const report = (done: number, total: number) => {
    if (total <= 16 * 1024 * 1024) return;
    if (!bar && !loading) {
      loading = true;
      void import("cli-progress").then(({ default: cliProgress }) => {
        if (stopped) return;
        const created = new cliProgress.SingleBar(
          { stream: process.stderr, format: `${name} [{bar}] {percentage}% {value}/{total} MiB` },
          cliProgress.Presets.shades_classic,
        );
        created.start(Math.ceil(total / 1048576), 0);
        if (shown) process.stderr.write("\r\x1b[K");
        bar = created;
      });
    }
    bar?.update(Math.floor(done / 1048576));
  };
  return { report, stop };
}
