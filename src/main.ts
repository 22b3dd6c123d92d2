#!/usr/bin/env node
// The `cairn` binary: parse argv, dispatch to a command, map the outcome to an exit code (0 ok, 1 failure, 2 usage).
import { Command, CommanderError } from "commander";
import { registerAuth } from "./cli/auth.js";
import { registerBench } from "./cli/bench.js";
import { EXIT_FAILURE, EXIT_USAGE, ExitError } from "./cli/common.js";
import { registerDemo } from "./cli/demo.js";
import { registerDoctor } from "./cli/doctor.js";
import { registerHostConfig } from "./cli/host-config.js";
import { registerRun } from "./cli/run.js";
import { registerRunner } from "./cli/runner.js";
import { registerServe } from "./cli/serve.js";
import { registerSnapshot } from "./cli/snapshot.js";
import { registerTools } from "./cli/tools.js";
import { registerUi } from "./cli/ui.js";
import { registerUpstream } from "./cli/upstream-check.js";
import { registerWorkspace } from "./cli/workspace.js";
import { redactWrites } from "./log.js";
import { VERSION } from "./version.js";

// Expanded ${VAR} values of the configuration never leave on stderr, whoever writes there (decision 0011).
redactWrites(process.stderr);

const program = new Command("cairn")
  .description("Code mode over every tool, handles instead of values, and a durable workspace, for AI agents (MCP)")
  .version(VERSION)
  .option("--config <file>", "cairn.toml to use (else $CAIRN_CONFIG, else ./cairn.toml, else built-in defaults)")
  .option("--workspace <dir>", "workspace directory (else $CAIRN_HOME, else ~/.cairn/workspace)")
  .showHelpAfterError()
  .exitOverride();

// The workspace commands are built from the operation table (zod and every operation's module): `--version` alone
// needs none of them.
const versionOnly = process.argv.length === 3 && (process.argv[2] === "--version" || process.argv[2] === "-V");
registerServe(program);
registerUi(program);
registerRun(program);
registerTools(program);
registerBench(program);
if (!versionOnly) (await import("./cli/operation-commands.js")).registerOperationCommands(program);
registerHostConfig(program);
registerDoctor(program);
registerSnapshot(program);
registerWorkspace(program);
registerRunner(program);
registerDemo(program);
registerAuth(program);
registerUpstream(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof ExitError) process.exitCode = error.exitCode;
  else if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
  } else {
    process.stderr.write(`cairn: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = EXIT_FAILURE;
  }
}
