// `cairn tools [QUERY]`: the capabilities snippets can call, listed or searched, with each upstream's state.
import type { Command } from "commander";
import { ExitError, openApp, reportFailure } from "./common.js";

export function registerTools(program: Command): void {
  program
    .command("tools")
    .description("list the configured capabilities, or search them by keyword")
    .argument("[query]", "keywords; omit to list everything")
    .option("--limit <n>", "most search results", (v) => Number.parseInt(v, 10), 20)
    .option("--json", "print machine-readable output")
    .action(async (query: string | undefined, options: { limit: number; json?: boolean }, command: Command) => {
      const app = await openApp(command);
      try {
        await app.start();
        const servers = app
          .upstreams()
          .map(({ server, status, cause, tools }) => ({ server, status, cause, tools: tools.length }));
        const capabilities =
          query === undefined
            ? app.registry.list().map((c) => ({ name: c.name, description: c.description }))
            : app.registry.search(query, options.limit).map((h) => ({ name: h.name, description: h.description }));
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ servers, capabilities }, null, 2)}\n`);
          return;
        }
        for (const s of servers) {
          process.stdout.write(`[${s.server}] ${s.status}${s.cause ? `: ${s.cause}` : ""} (${s.tools} tools)\n`);
        }
        for (const c of capabilities) {
          const line = c.description.split("\n")[0] ?? "";
          process.stdout.write(`${c.name}  ${line.length > 100 ? `${line.slice(0, 99)}…` : line}\n`);
        }
        if (capabilities.length === 0) process.stdout.write(query === undefined ? "no capabilities\n" : "no match\n");
      } catch (error) {
        throw new ExitError(reportFailure(error, options.json ?? false));
      } finally {
        await app.close();
      }
    });
}
