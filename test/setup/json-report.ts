// vitest's JSON reporter, writing each run's report to .vitest/report.json (what `npm run slowest` reads) without
// printing where on every run.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { JsonReporter } from "vitest/node";

const REPORT = ".vitest/report.json";

export default class JsonReport extends JsonReporter {
  override async writeReport(report: string): Promise<void> {
    const file = resolve(this.ctx.config.root, REPORT);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, report, "utf8");
  }
}
