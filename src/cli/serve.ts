// `cairn serve`: the MCP server. Stdio by default; `--tools` chooses exactly which tools a host sees.
import type { Command } from "commander";
import { serveStdio } from "../server/transports/stdio.js";
import { closeApp, EXIT_USAGE, ExitError, openApp } from "./common.js";

export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("serve MCP over stdio (the way Claude Desktop, Claude Code, Cursor and Codex start Cairn)")
    .option("--transport <transport>", "stdio", "stdio")
    .option("--tools <names...>", "expose exactly these tools (import and delete appear only when listed)")
    .action(async (options: { transport: string; tools?: string[] }, command: Command) => {
      if (options.transport !== "stdio") {
        process.stderr.write(`cairn serve: unknown transport "${options.transport}" (this build serves stdio)\n`);
        throw new ExitError(EXIT_USAGE);
      }
      const app = openApp(command);
      let tools: ReturnType<typeof app.selectTools>;
      try {
        tools = app.selectTools(options.tools?.flatMap((t) => t.split(",")).filter(Boolean));
      } catch (error) {
        process.stderr.write(`cairn serve: ${(error as Error).message}\n`);
        await closeApp(app);
        throw new ExitError(EXIT_USAGE);
      }
      const stop = async () => {
        await closeApp(app);
        process.exit(0);
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      await serveStdio(app, tools);
      await closeApp(app);
    });
}
