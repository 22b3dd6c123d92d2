// What the task ledger reads on either engine: the row shapes of its tables (the same columns on SQLite and PostgreSQL),
// their conversion to records, and the errors for a task or run that does not exist.
import { CairnError, ErrorCode } from "../../errors.js";
import type { ScheduleRecord, SkillRecord } from "./task-ledger.js";

export interface DefinitionRow {
  name: string;
  version: number;
  definition: string;
  created_at: string;
  actor: string | null;
}

export interface ScheduleRow {
  task: string;
  version: number;
  schedule: string;
  updated_at: string;
  next_due: number | null;
  last_run: string | null;
  last_checked: number | null;
}

export interface RunRow {
  id: string;
  seq: number;
  task: string;
  generation: number;
  definition_version: number;
  state: string;
  snapshot: string;
  progress: string;
  brief: string | null;
  error: string | null;
  run_artifact: string | null;
  published: number;
  owner_host: string;
  owner_pid: number;
  heartbeat_at: number;
  started_at: string;
  finished_at: string | null;
}

export function scheduleOf(row: ScheduleRow): ScheduleRecord {
  return {
    task: row.task,
    version: row.version,
    settings: JSON.parse(row.schedule),
    updated_at: row.updated_at,
    next_due: row.next_due,
    last_run: row.last_run,
    last_claimed: row.last_checked,
  };
}

export function noTask(name: string): CairnError {
  return new CairnError(ErrorCode.NOT_FOUND, `no task "${name}" in this workspace: define it with task_define first`);
}

export function noRun(runId: string): CairnError {
  return new CairnError(
    ErrorCode.NOT_FOUND,
    `no task run "${runId}" in this workspace: task_status {name} shows the task's newest run and its run_id`,
  );
}

export interface SkillRow {
  name: string;
  version: number;
  current_version: number;
  skill: string;
  description: string;
  created_at: string;
}

export function skillOf(row: SkillRow): SkillRecord {
  return { ...row, skill: JSON.parse(row.skill) };
}
