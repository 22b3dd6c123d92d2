#!/usr/bin/env node
// The `cairn` binary: parse argv, dispatch to a command, map the outcome to an exit code (0 ok, 1 failure, 2 usage).
// Only the command argv names is loaded (cli/program.ts); `--help` and `--version` load none.
import { CommanderError } from "commander";
import { EXIT_FAILURE, EXIT_USAGE, ExitError } from "./cli/common.js";
import { createProgram, registerCommands } from "./cli/program.js";
import { redactWrites } from "./log.js";

// Expanded ${VAR} values of the configuration never leave on stderr, whoever writes there (decision 0011).
redactWrites(process.stderr);

const program = createProgram();

try {
  await registerCommands(program, process.argv.slice(2));
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
