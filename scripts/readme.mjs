// Rewrites README.md's operation tables from the operation table (run after `npm run build`: `npm run readme`).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigSchema } from "../dist/config/schema.js";
import { withTables } from "../dist/operations/readme.js";

const path = join(import.meta.dirname, "..", "README.md");
const before = readFileSync(path, "utf8");
const after = withTables(before, ConfigSchema.parse({}));
if (after === before) console.log("README.md: the operation tables are current.");
else {
  writeFileSync(path, after);
  console.log("README.md: the operation tables are rewritten.");
}
