import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Separate processes: tests change process.env, start native modules and kill their own children.
    pool: "forks",
    // Most of a test file's time is spent waiting on what it started (the built CLI, upstream servers, DuckDB
    // children, Chromium) and on the deadlines of the code under test, so one worker more than the cores keeps them
    // busy; vitest's own default (cores - 1) runs one file at a time on 2 cores (decision 0272).
    maxWorkers: availableParallelism() + 1,
    // PostgreSQL and S3 are started on demand by the first file that asks (test/helpers/backends.ts).
    globalSetup: ["test/setup/services.ts"],
    // vitest's results cache (under node_modules/.vite) starts the files that were slowest last time first. `npm test`
    // and `npm run check` add the JSON report `npm run slowest` reads (test/setup/json-report.ts), not every run: with
    // it loaded, blob-store's 256 MiB streaming test went past its 64 MiB RSS bound in 3 of 6 runs (decision 0272).
  },
});
