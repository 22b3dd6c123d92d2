// Lists the slowest test files of the last `npm test` or `npm run check`, from the JSON report they write
// (.vitest/report.json), with each file's slowest tests: where the suite's time goes, without running it again.
// Usage: node scripts/slowest.mjs [count] [report.json]
import { existsSync, readFileSync } from "node:fs";
import { relative } from "node:path";

const count = Number(process.argv[2] ?? 10);
const path = process.argv[3] ?? ".vitest/report.json";
if (!Number.isInteger(count) || count < 1) {
  console.error(`the count must be a positive whole number, not ${JSON.stringify(process.argv[2])}`);
  process.exit(2);
}
if (!existsSync(path)) {
  console.error(`no vitest report at ${path}: run the tests first (npm test, or npx vitest run <files>)`);
  process.exit(1);
}
/** @type {{startTime: number, success: boolean, numTotalTests: number, testResults: {name: string, startTime: number, endTime: number, status: string, assertionResults: {fullName: string, duration?: number | null}[]}[]}} */
const report = JSON.parse(readFileSync(path, "utf8"));
const files = report.testResults.map((file) => ({
  name: relative(process.cwd(), file.name),
  ms: file.endTime - file.startTime,
  tests: file.assertionResults.length,
  status: file.status,
  slowest: [...file.assertionResults]
    .sort((a, b) => (b.duration ?? 0) - (a.duration ?? 0))
    .slice(0, 3)
    .filter((test) => (test.duration ?? 0) >= 1000),
}));
files.sort((a, b) => b.ms - a.ms);
const total = files.reduce((sum, file) => sum + file.ms, 0);
/** @param {number} ms */
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
console.log(
  `the ${Math.min(count, files.length)} slowest of ${files.length} test files (${report.numTotalTests} tests, ${seconds(total)} in all files together), run ${new Date(report.startTime).toISOString()}:`,
);
for (const file of files.slice(0, count)) {
  const failed = file.status === "failed" ? ", failed" : "";
  console.log(`${seconds(file.ms).padStart(8)}  ${file.name} (${file.tests} tests${failed})`);
  for (const test of file.slowest)
    console.log(`${"".padStart(10)}  ${seconds(test.duration ?? 0).padStart(8)}  ${test.fullName}`);
}
