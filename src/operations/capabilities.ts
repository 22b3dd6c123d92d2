// The registry entries of the operation table and of the allow-listed programs: what search_tools ranks and what
// describe_tools declares, with the operations' real input and output types.
import type { CliConfig } from "../config/schema.js";
import type { Capability, JsonSchema } from "../registry/capability.js";
import { isSafeIdentifier } from "../registry/identifiers.js";
import { toJsonSchema } from "./json-schema.js";
import type { Operation } from "./operation.js";

/** One capability per operation a snippet can call (`workspace.save`, `cairn.search_tools`). */
export function operationCapabilities(operations: readonly Operation[]): Capability[] {
  return operations.flatMap((operation) => {
    if (!operation.snippet) return [];
    const { path } = operation.snippet;
    const dot = path.indexOf(".");
    // The JSON Schemas are made on first read (describe_tools, a search, a call's check), not at start-up: converting
    // every operation's zod schemas was most of `cairn serve`'s time before its first answer (decision 0300).
    // toJsonSchema converts each schema once.
    return [
      {
        name: path,
        server: path.slice(0, dot),
        tool: path.slice(dot + 1),
        description: operation.description,
        get inputSchema(): JsonSchema {
          return toJsonSchema(operation.snippetInput ?? operation.input);
        },
        get outputSchema(): JsonSchema {
          return toJsonSchema(operation.output);
        },
      },
    ];
  });
}

/** One capability per allow-listed program (`cli.git`), declared with its real signature. */
export function programCapabilities(cli: CliConfig): Capability[] {
  if (cli.mode !== "allowlist") return [];
  return cli.allow.map((program) => {
    const subcommands = cli.programs[program]?.subcommands;
    const description =
      `Runs the allow-listed program ${program} with these arguments (no shell; a minimal environment; bounded time and output)` +
      (subcommands ? `; subcommands allowed: ${subcommands.join(", ")}` : "") +
      ". Output over the reply limit is spilled to an art_ handle.";
    const bound = isSafeIdentifier(program);
    const result = "Promise<{ exit_code: number; stdout: string; stderr: string; sandbox?: string }>";
    const declaration = bound
      ? `declare namespace cli {\n  /** ${description} */\n  function ${program}(...args: string[]): ${result};\n}`
      : `/** ${description} */\ndeclare function cli_run(name: ${JSON.stringify(program)}, args: string[]): ${result};`;
    return {
      name: `cli.${program}`,
      server: "cli",
      tool: program,
      description,
      inputSchema: {
        type: "object",
        properties: { args: { type: "array", items: { type: "string" }, description: "the program's arguments" } },
        required: ["args"],
        additionalProperties: false,
      },
      signature: {
        declaration,
        example: bound
          ? `await cli.${program}("--version")`
          : `await cli_run(${JSON.stringify(program)}, ["--version"])`,
      },
    };
  });
}
