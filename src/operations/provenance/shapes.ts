// Answer shapes shared by provenance and changes: an event's producer fields and the history-expiry note.
import { z } from "zod";

export const Producer = z.object({
  seq: z.number(),
  at: z.string(),
  actor: z.string(),
  role: z.string(),
  operation: z.string().describe("save, import, query.save_as, refresh, task_run, ..."),
  detail: z.record(z.string(), z.unknown()).describe("e.g. sql_sha256 and inputs, run_id, refreshed_from"),
});

export const History = z.object({
  expired_before_seq: z.number(),
  removed_at: z.string(),
  removed: z.number().describe("events removed so far"),
  note: z.string(),
});
