// `cairn demo`: plays a scripted agent through a two-session task over real flight data, once through Cairn and once
// with direct tool calls, and prints what each step cost the model in o200k_base tokens. It needs no configuration.
import type { Command } from "commander";
import pc from "picocolors";
import { DEFAULT_FLIGHTS, MAX_FLIGHTS } from "../demo/flights-data.js";
import type { Side, StepReport, WorkflowResult } from "../demo/workflow.js";
import { groupDigits } from "../digits.js";
import { EXIT_FAILURE, EXIT_USAGE, ExitError } from "./common.js";

interface DemoOptions {
  rows: string;
  json?: boolean;
}

const fmt = groupDigits;
const WIDTH = 64;
// A common context window today; the demo says when the direct way could not even fit in it.
const CONTEXT_WINDOW = 200_000;

export function registerDemo(program: Command): void {
  program
    .command("demo")
    .description(
      "show what Cairn saves: a scripted agent does a two-session task over real flight data through Cairn and with direct tool calls, token for token",
    )
    .option("--rows <n>", `flights the example server serves (1 to ${fmt(MAX_FLIGHTS)})`, String(DEFAULT_FLIGHTS))
    .option("--json", "print the whole report as JSON")
    .addHelpText(
      "after",
      "\nEverything runs in temporary directories: the demo reads no cairn.toml and leaves no workspace behind.",
    )
    .action(async (options: DemoOptions) => {
      const rows = Number(options.rows.replaceAll(",", "").replaceAll("_", ""));
      if (!Number.isInteger(rows) || rows < 1 || rows > MAX_FLIGHTS) {
        process.stderr.write(
          `cairn demo: --rows must be an integer from 1 to ${fmt(MAX_FLIGHTS)}, got "${options.rows}"\n`,
        );
        throw new ExitError(EXIT_USAGE);
      }
      // Loaded here so that `cairn --help` never pays for the MCP client or the tokenizer.
      const { runWorkflow, QUESTION } = await import("../demo/workflow.js");
      const c = pc.createColors(process.stdout.isTTY === true && !("NO_COLOR" in process.env));
      const out = (line = "") => process.stdout.write(`${line}\n`);
      if (!options.json) {
        out(
          `${c.bold("Cairn demo")}: a scripted agent does the same two-session task twice, ${c.green("through Cairn")} and ${c.yellow("with direct tool calls")},`,
        );
        out(`over the first ${fmt(rows)} US flights of 2001 (vega-datasets), served by a bundled example MCP server.`);
        out();
        out(`${c.bold("Task:")} ${QUESTION}`);
        out(
          c.dim(
            "Tokens: o200k_base, counted on the exact text the model reads and writes: tool definitions, requests, replies.",
          ),
        );
      }
      // Starting the servers takes a few seconds before the first step: say so on a terminal.
      if (!options.json && process.stderr.isTTY) {
        process.stderr.write(c.dim("\nstarting Cairn, the flights server and a note store…\n"));
      }
      let session = 0;
      const onStep = (step: StepReport, index: number) => {
        if (options.json) return;
        if (step.session !== session) {
          session = step.session;
          out();
          out(
            `${c.bold(`Session ${session}`.padEnd(WIDTH))}${c.bold("Cairn".padStart(10))}${c.bold("direct".padStart(12))}`,
          );
        }
        const title = `${String(index + 1).padStart(2)}. ${step.title}`;
        out(
          `${title.padEnd(WIDTH)}${c.green(fmt(step.cairn.tokens).padStart(10))}${c.yellow(fmt(step.direct.tokens).padStart(12))}`,
        );
        out(c.dim(`      Cairn:  ${describe(step.cairn)}`));
        out(c.dim(`      direct: ${describe(step.direct)}`));
      };
      let result: WorkflowResult;
      try {
        result = await runWorkflow({ rows, onStep });
      } catch (error) {
        process.stderr.write(`cairn demo: ${(error as Error).message}\n`);
        throw new ExitError(EXIT_FAILURE);
      }
      if (options.json) {
        out(JSON.stringify(result, null, 2));
        return;
      }
      const { cairn, direct } = result.totals;
      out();
      out(
        `${c.bold("Total".padEnd(WIDTH))}${c.green(c.bold(fmt(cairn.tokens).padStart(10)))}${c.yellow(c.bold(fmt(direct.tokens).padStart(12)))}`,
      );
      out(c.dim(`      ${cairn.calls} tool calls through Cairn, ${direct.calls} direct`));
      out();
      const saving =
        result.saving_percent >= 0
          ? `Cairn used ${c.bold(c.green(`${result.saving_percent}% fewer tokens`))} than direct tool calls for the same answers.`
          : `At this size Cairn used ${c.bold(`${-result.saving_percent}% more tokens`)} than direct calls: its own tool definitions outweigh the data.`;
      out(saving);
      const biggest = Math.max(...result.steps.map((s) => s.direct.tokens));
      if (biggest > CONTEXT_WINDOW) {
        out(
          c.dim(
            `The direct way's biggest step alone is ${fmt(biggest)} tokens: more than a ${fmt(CONTEXT_WINDOW)}-token context window holds.`,
          ),
        );
      }
      const a = result.answers;
      const top = a.top
        .slice(0, 5)
        .map((t) => `${t.iata} ${t.delayed_2h}`)
        .join(", ");
      const ca = a.california
        .slice(0, 3)
        .map((r) => `${r.origin} ${r.delayed_2h} of ${fmt(r.flights)}`)
        .join(", ");
      out(
        c.dim(
          `Answer (both ways): ${fmt(a.delayed_2h)} of ${fmt(a.scanned)} flights were delayed over 2 h; most from ${top}. California: ${ca || "none"}.`,
        ),
      );
      out(
        c.dim(
          `More data: cairn demo --rows 100000. Several sizes and the small-task crossover: npm run bench -- tokens.`,
        ),
      );
    });
}

function describe(side: Side): string {
  return side.got ? `${side.did} → ${side.got}` : side.did;
}
