// Preloaded into every Node process of a test run by scripts/suite-cpu.mjs (NODE_OPTIONS=--require): writes, every
// 250 ms and at exit, this process's CPU time, the CPU time of the children it has reaped (from /proc, so programs
// that are not Node count too), the test file a vitest worker runs and the command line, one JSON file per process
// under CAIRN_CPU_ACCOUNT_DIR. Only the main thread writes (a process's CPU time counts its threads too).
const { readFileSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const { isMainThread } = require("node:worker_threads");

const dir = process.env.CAIRN_CPU_ACCOUNT_DIR;
if (dir && isMainThread) {
  const file = join(dir, String(process.pid));
  const record = () => {
    try {
      const own = process.cpuUsage();
      // /proc/self/stat after the command's closing parenthesis: field 14 and 15 are cutime and cstime, in ticks.
      const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
      const ticks = Number(fields[13]) + Number(fields[14]);
      writeFileSync(
        file,
        JSON.stringify({
          argv: process.argv.slice(1, 4),
          ms: (own.user + own.system) / 1000,
          children_ms: ticks * 10,
          test: globalThis.__vitest_worker__?.filepath,
        }),
      );
    } catch {
      // A process that cannot write its record is left out of the table; the run goes on.
    }
  };
  setInterval(record, 250).unref();
  process.on("exit", record);
}
