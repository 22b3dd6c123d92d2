#!/usr/bin/env node
// The `cairn` binary: parse argv, dispatch to a command, map the outcome to an exit code (0 ok, 1 failure, 2 usage).
// Only the command argv names is loaded (cli/program.ts); `--help` and `--version` load none.
import module from "node:module";
import { CommanderError } from "commander";
import { EXIT_FAILURE, EXIT_USAGE, ExitError } from "./cli/common.js";
import { createProgram, registerCommands } from "./cli/program.js";
import { redactWrites } from "./log.js";

// Node 22.1 and later keep the compiled code of the modules each command loads (all imported after this line) on
// disk between runs; Node 20 has no such cache, and a cache that cannot be written is only slower (decision 0300).
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

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
