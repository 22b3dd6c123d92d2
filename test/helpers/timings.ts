// Figures a test measures but does not assert (page load times, per-call costs): printed only under
// CAIRN_TEST_TIMINGS=1, so a green run's output carries results and nothing else. `npm run bench` reports them properly.
export function printTimings(label: string, figures: unknown): void {
  if (process.env.CAIRN_TEST_TIMINGS) process.stdout.write(`${label}: ${JSON.stringify(figures)}\n`);
}
