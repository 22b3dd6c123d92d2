// How the web view writes sizes, times and counts: short, exact where it matters (the title attribute keeps the
// exact value), in UTC so two people looking at one workspace read the same time.
import { groupDigits } from "../digits.js";

const UNITS = ["bytes", "KiB", "MiB", "GiB", "TiB"];

/** 1536 -> "1.5 KiB"; below 1 KiB the exact count. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${groupDigits(bytes)} ${bytes === 1 ? "byte" : "bytes"}`;
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 100 ? Math.round(value) : value.toFixed(1)} ${UNITS[unit]}`;
}

/** An ISO 8601 time as "2026-07-07 17:47 UTC" (the catalog stores UTC). */
export function formatTime(iso: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match ? `${match[1]} ${match[2]} UTC` : iso;
}

/** 12345 -> "12,345". */
export function formatCount(n: number): string {
  return groupDigits(n);
}

/** "1 artifact", "2 artifacts". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${groupDigits(n)} ${n === 1 ? one : many}`;
}
