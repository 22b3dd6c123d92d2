// Writes dist/cli/command-index.json: every top-level command's help line and module, read from the built program,
// so `cairn --help` lists them without loading one (decision 0300). Run by `npm run build` after tsc.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { indexCommands } from "../dist/cli/program.js";
import { VERSION } from "../dist/version.js";

const commands = await indexCommands();
writeFileSync(
  join(import.meta.dirname, "..", "dist", "cli", "command-index.json"),
  `${JSON.stringify({ version: VERSION, commands }, null, 1)}\n`,
);
