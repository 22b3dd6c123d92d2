// The README's tables of operations, generated from the operation table with the built-in defaults; a test fails
// when README.md holds other text, and `npm run readme` rewrites it.
import type { Config } from "../config/schema.js";
import { signatureOf } from "./fields.js";
import { operations } from "./table.js";

const README_BLOCKS = {
  tools: { start: "<!-- operations:tools:start -->", end: "<!-- operations:tools:end -->" },
  snippets: { start: "<!-- operations:snippets:start -->", end: "<!-- operations:snippets:end -->" },
} as const;

/** `| tool | input | what it does |` for every operation a host can list, marked when not in `agent`. */
function toolTable(config: Config): string {
  const rows = operations(config).flatMap((op) => {
    if (!op.tool) return [];
    const { profiles } = op.tool;
    const optIn = profiles.includes("agent") ? "" : profiles.includes("runtime") ? " (runtime)" : " (opt-in)";
    return [`| \`${op.name}\`${optIn} | \`${signatureOf(op.input)}\` | ${op.summary} |`];
  });
  return ["| tool | input | what it does, and its limits |", "|---|---|---|", ...rows].join("\n");
}

/** `| function | what it is |` for every operation a snippet can call. */
function snippetTable(config: Config): string {
  const rows = operations(config).flatMap((op) =>
    op.snippet ? [`| \`${op.snippet.path}(${signatureOf(op.snippetInput ?? op.input)})\` | ${op.title} |`] : [],
  );
  return ["| function | what it does |", "|---|---|", ...rows].join("\n");
}

/** `text` with each block between its markers replaced by the generated table; markers missing throw. */
export function withTables(text: string, config: Config): string {
  let out = text;
  for (const [key, make] of [
    ["tools", toolTable],
    ["snippets", snippetTable],
  ] as const) {
    const { start, end } = README_BLOCKS[key];
    const from = out.indexOf(start);
    const to = out.indexOf(end);
    if (from < 0 || to < from) throw new Error(`README.md has no ${start} … ${end} block`);
    out = `${out.slice(0, from + start.length)}\n${make(config)}\n${out.slice(to)}`;
  }
  return out;
}
