// The TaskLedger on the SQLite catalog's connection: each method one transaction (writes BEGIN IMMEDIATE, behind the
// catalog's write gate), publication in the same transaction as the versions it makes.

import { CairnError, ErrorCode } from "../../errors.js";
import type { InsertOptions, NewVersion, VersionRecord } from "./catalog.js";
import type { NewEvent } from "./event-log.js";
import { type CatalogConnection, writeTx } from "./sqlite-connection.js";
import type {
  Approval,
  CacheBounds,
  CacheEntry,
  FinishedRun,
  LeaseAnswer,
  Owner,
  Publication,
  PublishedTask,
  RunRecord,
  RunState,
  ScheduleRecord,
  ScheduleSlot,
  SkillRecord,
  TaskDefinitionRecord,
  TaskLedger,
  TaskRecord,
} from "./task-ledger.js";
import {
  type DefinitionRow,
  noRun,
  noTask,
  type RunRow,
  type ScheduleRow,
  type SkillRow,
  scheduleOf,
  skillOf,
} from "./task-ledger-rows.js";

/** What the ledger borrows from the catalog it is part of. */
export interface LedgerHost extends CatalogConnection {
  /** Inside a write transaction: inserts a version (expected version checked). */
  insertTx(version: NewVersion, options: InsertOptions): VersionRecord;
  /** Inside a transaction: refs to ids, NOT_FOUND for any missing. */
  resolveDependencies(refs: readonly string[]): string[];
  /**
   * Inside a write transaction: FENCED unless `ticket` is the resource's current claim ticket (held by `holder`, when
   * given); without a ticket,
   * CLAIM_HELD while another holder's claim on it is unexpired.
   */
  checkFence(fence: { resource: string; ticket?: number | undefined; holder?: string | undefined }): void;
  /** Inside a transaction: the current version of a name. */
  current(name: string): VersionRecord | undefined;
  /** Inside a write transaction: records the write in the catalog's event log. */
  appendEvent(event: NewEvent): void;
}

interface TaskRow {
  name: string;
  current_version: number;
  last_generation: number;
  published_run: string | null;
  published_generation: number;
  latest_success: string | null;
}

export class SqliteTaskLedger implements TaskLedger {
  constructor(private readonly host: LedgerHost) {}

  private read<T>(work: () => T): Promise<T> {
    return Promise.resolve(this.host.db.transaction(work)());
  }

  defineTask(
    name: string,
    definition: unknown,
    options: { expectedVersion?: number | undefined; actor?: string | undefined },
  ): Promise<TaskDefinitionRecord> {
    return writeTx(this.host, () => {
      const task = this.taskRow(name);
      const current = task?.current_version;
      if (current === undefined ? options.expectedVersion !== undefined : options.expectedVersion !== current) {
        const message =
          current === undefined
            ? `task ${name} does not exist yet: define it without expected_version`
            : options.expectedVersion === undefined
              ? `task ${name} is at definition version ${current}: pass expected_version ${current} to replace it (task_status shows it)`
              : `task ${name} is at definition version ${current}, not ${options.expectedVersion}: another writer changed it; read it again (task_status) and pass expected_version ${current}`;
        throw new CairnError(ErrorCode.VERSION_CONFLICT, message, {
          data: { name, current_version: current ?? null, expected_version: options.expectedVersion ?? null },
        });
      }
      // Versions never repeat: the counter is the highest version ever written for the name.
      const last = this.host.q("SELECT max(version) FROM task_definitions WHERE name = ?", true).get(name) as
        | number
        | null;
      const version = (last ?? 0) + 1;
      const createdAt = new Date().toISOString();
      this.host
        .q("INSERT INTO task_definitions (name, version, definition, created_at, actor) VALUES (?, ?, ?, ?, ?)")
        .run(name, version, JSON.stringify(definition), createdAt, options.actor ?? null);
      this.host
        .q(
          `INSERT INTO tasks (name, current_version) VALUES (?, ?)
           ON CONFLICT (name) DO UPDATE SET current_version = excluded.current_version`,
        )
        .run(name, version);
      this.host.appendEvent({
        ...(options.actor === undefined ? {} : { actor: options.actor }),
        operation: "task_define",
        ref: name,
        artifact_id: null,
        version,
        detail: {},
      });
      return { name, version, definition, created_at: createdAt, actor: options.actor ?? null };
    });
  }

  task(name: string): Promise<TaskRecord | undefined> {
    return this.read(() => {
      const row = this.taskRow(name);
      return row === undefined ? undefined : this.taskOf(row);
    });
  }

  taskVersion(name: string, version: number): Promise<TaskDefinitionRecord | undefined> {
    return this.read(() => this.definitionOf(name, version));
  }

  tasks(): Promise<TaskRecord[]> {
    return this.read(() =>
      (this.host.q("SELECT * FROM tasks ORDER BY name").all() as TaskRow[]).map((row) => this.taskOf(row)),
    );
  }

  startRun(input: {
    runId: string;
    task: string;
    definitionVersion: number;
    snapshot: Record<string, string>;
    owner: Owner;
  }): Promise<RunRecord> {
    return writeTx(this.host, () => {
      const task = this.taskRow(input.task);
      if (task === undefined) throw noTask(input.task);
      const generation = task.last_generation + 1;
      this.host.q("UPDATE tasks SET last_generation = ? WHERE name = ?").run(generation, input.task);
      const seq = ((this.host.q("SELECT max(seq) FROM task_runs", true).get() as number | null) ?? 0) + 1;
      this.host
        .q(
          `INSERT INTO task_runs (id, seq, task, generation, definition_version, state, snapshot, owner_host,
             owner_pid, heartbeat_at, started_at)
           VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)`,
        )
        .run(
          input.runId,
          seq,
          input.task,
          generation,
          input.definitionVersion,
          JSON.stringify(input.snapshot),
          input.owner.host,
          input.owner.pid,
          Date.now(),
          new Date().toISOString(),
        );
      return this.runOf(this.runRow(input.runId) as RunRow);
    });
  }

  resumeRun(runId: string, owner: Owner, isAlive: (owner: Owner) => boolean): Promise<RunRecord> {
    return writeTx(this.host, () => {
      const row = this.runRow(runId);
      if (row === undefined) throw noRun(runId);
      const run = this.runOf(row);
      if (run.state === "succeeded") {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `run ${runId} succeeded: there is nothing to resume. Reopen it with task_status {run_id}, or call task_run without resume_from for a new run`,
        );
      }
      if (run.state === "running" && isAlive(run.owner)) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `run ${runId} is still running in process ${run.owner.pid} on ${run.owner.host}: wait for it (task_status {run_id}) rather than resuming it`,
        );
      }
      this.host
        .q(
          `UPDATE task_runs SET state = 'running', owner_host = ?, owner_pid = ?, heartbeat_at = ?, error = NULL,
             finished_at = NULL WHERE id = ?`,
        )
        .run(owner.host, owner.pid, Date.now(), runId);
      return this.runOf(this.runRow(runId) as RunRow);
    });
  }

  recordProgress(runId: string, progress: Record<string, unknown>): Promise<void> {
    return writeTx(this.host, () => {
      this.host
        .q("UPDATE task_runs SET progress = ?, heartbeat_at = ? WHERE id = ?")
        .run(JSON.stringify(progress), Date.now(), runId);
    });
  }

  heartbeat(runId: string): Promise<void> {
    return writeTx(this.host, () => {
      this.host.q("UPDATE task_runs SET heartbeat_at = ? WHERE id = ? AND state = 'running'").run(Date.now(), runId);
    });
  }

  finishRun(
    runId: string,
    outcome: {
      state: Exclude<RunState, "running">;
      brief: unknown;
      error?: { code: string; message: string };
      reused?: readonly string[];
      actor?: string | undefined;
    },
    publication?: Publication,
  ): Promise<FinishedRun> {
    return writeTx(this.host, () => {
      const by = outcome.actor === undefined ? {} : { actor: outcome.actor };
      const touch = this.host.q("UPDATE step_cache SET used_at = ?, hits = hits + 1 WHERE key = ?");
      for (const key of outcome.reused ?? []) touch.run(Date.now(), key);
      const row = this.runRow(runId);
      if (row === undefined) throw noRun(runId);
      const task = this.taskRow(row.task);
      if (task === undefined) throw noTask(row.task);
      const newest = row.generation >= task.published_generation;
      const steps: VersionRecord[] = [];
      let runArtifact: VersionRecord | null = null;
      if (publication !== undefined && newest) {
        if (publication.fence !== undefined) this.host.checkFence(publication.fence);
        const made = { ...by, operation: "task_run", detail: { run_id: runId, task: row.task } };
        for (const version of publication.steps) steps.push(this.publishVersion(version, made));
        runArtifact = this.publishVersion(publication.run, made);
        const succeeded = outcome.state === "succeeded";
        this.host
          .q(
            `UPDATE tasks SET published_run = ?, published_generation = ?,
               latest_success = CASE WHEN ? THEN ? ELSE latest_success END WHERE name = ?`,
          )
          .run(runId, row.generation, succeeded ? 1 : 0, runId, row.task);
      }
      const published = publication !== undefined && newest;
      this.host
        .q(
          `UPDATE task_runs SET state = ?, brief = ?, error = ?, run_artifact = coalesce(?, run_artifact),
             published = max(published, ?), finished_at = ?, heartbeat_at = ? WHERE id = ?`,
        )
        .run(
          outcome.state,
          JSON.stringify(outcome.brief),
          outcome.error === undefined ? null : JSON.stringify(outcome.error),
          runArtifact?.artifact_id ?? null,
          published ? 1 : 0,
          new Date().toISOString(),
          Date.now(),
          runId,
        );
      const run = this.runOf(this.runRow(runId) as RunRow);
      this.host.appendEvent({
        ...by,
        operation: "task_run",
        ref: row.task,
        artifact_id: null,
        version: null,
        detail: {
          run_id: runId,
          state: outcome.state,
          published,
          reused: outcome.reused?.length ?? 0,
          ...(outcome.error === undefined ? {} : { error: outcome.error.code }),
        },
      });
      return { run, published: run.published, steps, runArtifact };
    });
  }

  /** The name's current version when it holds the same bytes and dependencies; otherwise a new version. */
  private publishVersion(version: NewVersion, event: InsertOptions["event"]): VersionRecord {
    const current = this.host.current(version.name);
    const dependencies = this.host.resolveDependencies(version.dependencies);
    if (
      current !== undefined &&
      current.sha256 === version.sha256 &&
      current.dependencies.length === dependencies.length &&
      current.dependencies.every((id, i) => id === dependencies[i])
    ) {
      return current;
    }
    return this.host.insertTx(
      { ...version, dependencies },
      current === undefined ? { event } : { expectedVersion: current.version, event },
    );
  }

  run(runId: string): Promise<RunRecord | undefined> {
    return this.read(() => {
      const row = this.runRow(runId);
      return row === undefined ? undefined : this.runOf(row);
    });
  }

  runs(task: string, limit: number): Promise<RunRecord[]> {
    return this.read(() =>
      (
        this.host.q("SELECT * FROM task_runs WHERE task = ? ORDER BY seq DESC LIMIT ?").all(task, limit) as RunRow[]
      ).map((row) => this.runOf(row)),
    );
  }

  cacheGet(key: string): Promise<CacheEntry | undefined> {
    // A read: the use is recorded by finishRun (outcome.reused), in the run's one closing write.
    return this.read(() => {
      const row = this.host.q("SELECT * FROM step_cache WHERE key = ?").get(key) as
        | (Omit<CacheEntry, "meta"> & { meta: string })
        | undefined;
      if (row === undefined) return undefined;
      return {
        key: row.key,
        sha256: row.sha256,
        bytes: row.bytes,
        kind: row.kind,
        media_type: row.media_type,
        meta: JSON.parse(row.meta),
        hits: row.hits,
      };
    });
  }

  cachePut(entry: Omit<CacheEntry, "hits">, bounds: CacheBounds): Promise<number> {
    return writeTx(this.host, () => {
      const now = Date.now();
      this.host
        .q(
          `INSERT INTO step_cache (key, sha256, bytes, kind, media_type, meta, created_at, used_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (key) DO UPDATE SET sha256 = excluded.sha256, bytes = excluded.bytes, kind = excluded.kind,
             media_type = excluded.media_type, meta = excluded.meta, used_at = excluded.used_at`,
        )
        .run(entry.key, entry.sha256, entry.bytes, entry.kind, entry.media_type, JSON.stringify(entry.meta), now, now);
      // Least recently used first, until both bounds hold; the entry just added goes last.
      let { count, total } = this.host
        .q("SELECT count(*) AS count, coalesce(sum(bytes), 0) AS total FROM step_cache")
        .get() as {
        count: number;
        total: number;
      };
      let evicted = 0;
      const oldest = this.host.q("SELECT key, bytes FROM step_cache WHERE key <> ? ORDER BY used_at, key LIMIT 64");
      const remove = this.host.q("DELETE FROM step_cache WHERE key = ?");
      while (count > bounds.maxEntries || total > bounds.maxBytes) {
        const batch = oldest.all(entry.key) as { key: string; bytes: number }[];
        if (batch.length === 0) break;
        for (const victim of batch) {
          if (count <= bounds.maxEntries && total <= bounds.maxBytes) break;
          remove.run(victim.key);
          count -= 1;
          total -= victim.bytes;
          evicted += 1;
        }
      }
      return evicted;
    });
  }

  cacheClear(): Promise<number> {
    return writeTx(this.host, () => this.host.q("DELETE FROM step_cache").run().changes);
  }

  cacheDrop(key: string): Promise<void> {
    return writeTx(this.host, () => {
      this.host.q("DELETE FROM step_cache WHERE key = ?").run(key);
    });
  }

  acquireLease(key: string, owner: Owner, ttlMs: number, isAlive: (owner: Owner) => boolean): Promise<LeaseAnswer> {
    return writeTx(this.host, () => {
      const now = Date.now();
      const held = this.host.q("SELECT * FROM step_leases WHERE key = ?").get(key) as
        | { token: string; owner_host: string; owner_pid: number; expires_at: number }
        | undefined;
      if (held !== undefined && held.expires_at > now) {
        const holder = { host: held.owner_host, pid: held.owner_pid };
        if (isAlive(holder)) return { holder, expires_at: held.expires_at };
      }
      const token = `${owner.pid}-${now}-${Math.random().toString(36).slice(2)}`;
      this.host
        .q(
          `INSERT INTO step_leases (key, token, owner_host, owner_pid, expires_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (key) DO UPDATE SET token = excluded.token, owner_host = excluded.owner_host,
             owner_pid = excluded.owner_pid, expires_at = excluded.expires_at`,
        )
        .run(key, token, owner.host, owner.pid, now + ttlMs);
      return { token };
    });
  }

  renewLease(key: string, token: string, ttlMs: number): Promise<boolean> {
    return writeTx(
      this.host,
      () =>
        this.host
          .q("UPDATE step_leases SET expires_at = ? WHERE key = ? AND token = ?")
          .run(Date.now() + ttlMs, key, token).changes === 1,
    );
  }

  releaseLease(key: string, token: string): Promise<void> {
    return writeTx(this.host, () => {
      this.host.q("DELETE FROM step_leases WHERE key = ? AND token = ?").run(key, token);
    });
  }

  approve(artifactId: string, approver: string): Promise<Approval> {
    return writeTx(this.host, () => {
      const approvedAt = new Date().toISOString();
      this.host
        .q("INSERT INTO approvals (artifact_id, approver, approved_at) VALUES (?, ?, ?)")
        .run(artifactId, approver, approvedAt);
      this.host.appendEvent({
        actor: approver,
        role: "approver",
        operation: "approve",
        ref: null,
        artifact_id: artifactId,
        version: null,
        detail: {},
      });
      return { artifact_id: artifactId, approver, approved_at: approvedAt };
    });
  }

  revokeApprovals(artifactId: string, actor: string): Promise<number> {
    return writeTx(this.host, () => {
      const { changes } = this.host
        .q("UPDATE approvals SET revoked_at = ?, revoked_by = ? WHERE artifact_id = ? AND revoked_at IS NULL")
        .run(new Date().toISOString(), actor, artifactId);
      if (changes > 0) {
        this.host.appendEvent({
          actor,
          role: "approver",
          operation: "approve.revoke",
          ref: null,
          artifact_id: artifactId,
          version: null,
          detail: { revoked: changes },
        });
      }
      return changes;
    });
  }

  approvals(artifactIds: readonly string[]): Promise<Approval[]> {
    return this.read(() => {
      const select = this.host.q(
        "SELECT artifact_id, approver, approved_at FROM approvals WHERE artifact_id = ? AND revoked_at IS NULL ORDER BY id",
      );
      return [...new Set(artifactIds)].flatMap((id) => select.all(id) as Approval[]);
    });
  }

  private taskRow(name: string): TaskRow | undefined {
    return this.host.q("SELECT * FROM tasks WHERE name = ?").get(name) as TaskRow | undefined;
  }

  private definitionOf(name: string, version: number): TaskDefinitionRecord | undefined {
    const row = this.host.q("SELECT * FROM task_definitions WHERE name = ? AND version = ?").get(name, version) as
      | DefinitionRow
      | undefined;
    return row === undefined ? undefined : { ...row, definition: JSON.parse(row.definition) };
  }

  private taskOf(row: TaskRow): TaskRecord {
    return {
      name: row.name,
      current_version: row.current_version,
      definition: this.definitionOf(row.name, row.current_version) as TaskDefinitionRecord,
      published_run: row.published_run,
      published_generation: row.published_generation,
      latest_success: row.latest_success,
      last_generation: row.last_generation,
    };
  }

  private runRow(runId: string): RunRow | undefined {
    return this.host.q("SELECT * FROM task_runs WHERE id = ?").get(runId) as RunRow | undefined;
  }

  private runOf(row: RunRow): RunRecord {
    return {
      run_id: row.id,
      task: row.task,
      generation: row.generation,
      definition_version: row.definition_version,
      state: row.state as RunState,
      snapshot: JSON.parse(row.snapshot) as Record<string, string>,
      progress: JSON.parse(row.progress) as Record<string, unknown>,
      brief: row.brief === null ? null : JSON.parse(row.brief),
      error: row.error === null ? null : (JSON.parse(row.error) as { code: string; message: string }),
      run_artifact: row.run_artifact,
      published: row.published === 1,
      owner: { host: row.owner_host, pid: row.owner_pid },
      heartbeat_at: row.heartbeat_at,
      started_at: row.started_at,
      finished_at: row.finished_at,
    };
  }

  // --- skills: reusable plans distilled from successful runs (tasks/skills.ts) ----------------------------------

  putSkill(
    name: string,
    skill: unknown,
    description: string,
    options: { expectedVersion?: number | undefined; actor?: string | undefined },
  ): Promise<SkillRecord> {
    return writeTx(this.host, () => {
      const current = this.host.q("SELECT current_version FROM skill_names WHERE name = ?", true).get(name) as
        | number
        | undefined;
      if (current === undefined ? options.expectedVersion !== undefined : options.expectedVersion !== current) {
        const message =
          current === undefined
            ? `skill ${name} does not exist yet: distill it without expected_version`
            : options.expectedVersion === undefined
              ? `skill ${name} is at version ${current}: pass expected_version ${current} to replace it (skill_inspect shows it), or choose another name`
              : `skill ${name} is at version ${current}, not ${options.expectedVersion}: another writer changed it; inspect it again and pass expected_version ${current}`;
        throw new CairnError(ErrorCode.VERSION_CONFLICT, message, {
          data: { name, current_version: current ?? null, expected_version: options.expectedVersion ?? null },
        });
      }
      // Versions never repeat: the next one follows the highest ever written for the name.
      const last = this.host.q("SELECT max(version) FROM skills WHERE name = ?", true).get(name) as number | null;
      const version = (last ?? 0) + 1;
      const createdAt = new Date().toISOString();
      this.host
        .q("INSERT INTO skills (name, version, skill, description, created_at) VALUES (?, ?, ?, ?, ?)")
        .run(name, version, JSON.stringify(skill), description, createdAt);
      this.host.appendEvent({
        ...(options.actor === undefined ? {} : { actor: options.actor }),
        operation: "skill_distill",
        ref: name,
        artifact_id: null,
        version,
        detail: {},
      });
      this.host
        .q(
          `INSERT INTO skill_names (name, current_version) VALUES (?, ?)
           ON CONFLICT (name) DO UPDATE SET current_version = excluded.current_version`,
        )
        .run(name, version);
      return { name, version, current_version: version, skill, description, created_at: createdAt };
    });
  }

  skill(name: string, version?: number): Promise<SkillRecord | undefined> {
    return this.read(() => {
      const row = this.host
        .q(
          `SELECT s.*, n.current_version FROM skill_names n JOIN skills s ON s.name = n.name
           WHERE n.name = ? AND s.version = coalesce(?, n.current_version)`,
        )
        .get(name, version ?? null) as SkillRow | undefined;
      return row === undefined ? undefined : skillOf(row);
    });
  }

  skills(): Promise<SkillRecord[]> {
    return this.read(() =>
      (
        this.host
          .q(
            `SELECT s.*, n.current_version FROM skill_names n JOIN skills s
               ON s.name = n.name AND s.version = n.current_version
             ORDER BY s.created_at DESC, s.name`,
          )
          .all() as SkillRow[]
      ).map(skillOf),
    );
  }
  // --- Schedules and verification ------------------------------------------------------------------------------

  schedule(task: string): Promise<ScheduleRecord | undefined> {
    return this.read(() => {
      const row = this.scheduleRow(task);
      return row === undefined ? undefined : scheduleOf(row);
    });
  }

  schedules(options: { after?: string | undefined; limit: number }): Promise<ScheduleRecord[]> {
    return this.read(() =>
      (
        this.host
          .q("SELECT * FROM task_schedules WHERE task > ? ORDER BY task LIMIT ?")
          .all(options.after ?? "", options.limit) as ScheduleRow[]
      ).map(scheduleOf),
    );
  }

  putSchedule(
    task: string,
    settings: unknown,
    options: { expectedVersion?: number | undefined; nextDue: number | null; actor?: string | undefined },
  ): Promise<ScheduleRecord> {
    return writeTx(this.host, () => {
      if (this.taskRow(task) === undefined) throw noTask(task);
      const current = this.scheduleRow(task)?.version;
      if (current === undefined ? options.expectedVersion !== undefined : options.expectedVersion !== current) {
        const message =
          current === undefined
            ? `task ${task} has no schedule yet: create it without expected_version`
            : options.expectedVersion === undefined
              ? `the schedule of task ${task} is at version ${current}: pass expected_version ${current} to change it (task_schedule {"name": ${JSON.stringify(task)}} shows it)`
              : `the schedule of task ${task} is at version ${current}, not ${options.expectedVersion}: another writer changed it; read it again (task_schedule {"name": ${JSON.stringify(task)}}) and pass expected_version ${current}`;
        throw new CairnError(ErrorCode.VERSION_CONFLICT, message, {
          data: { name: task, current_version: current ?? null, expected_version: options.expectedVersion ?? null },
        });
      }
      const version = (current ?? 0) + 1;
      const updatedAt = new Date().toISOString();
      // last_checked holds the time of the last claim.
      this.host
        .q(
          `INSERT INTO task_schedules (task, version, schedule, updated_at, next_due) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (task) DO UPDATE SET version = excluded.version, schedule = excluded.schedule,
             updated_at = excluded.updated_at, next_due = excluded.next_due`,
        )
        .run(task, version, JSON.stringify(settings), updatedAt, options.nextDue);
      this.host.appendEvent({
        ...(options.actor === undefined ? {} : { actor: options.actor }),
        operation: "task_schedule",
        ref: task,
        artifact_id: null,
        version,
        detail: {},
      });
      return scheduleOf(this.scheduleRow(task) as ScheduleRow);
    });
  }

  claimSchedule(task: string, seen: ScheduleSlot, claim: ScheduleSlot, at: number): Promise<boolean> {
    return writeTx(
      this.host,
      () =>
        this.host
          .q(
            `UPDATE task_schedules SET next_due = ?, last_run = ?, last_checked = ?
             WHERE task = ? AND next_due IS ? AND last_run IS ?`,
          )
          .run(claim.next_due, claim.last_run, at, task, seen.next_due, seen.last_run).changes === 1,
    );
  }

  publishedTasks(options: { after?: string | undefined; limit: number }): Promise<PublishedTask[]> {
    return this.read(() =>
      (
        this.host
          .q("SELECT * FROM tasks WHERE published_run IS NOT NULL AND name > ? ORDER BY name LIMIT ?")
          .all(options.after ?? "", options.limit) as TaskRow[]
      ).flatMap((row) => {
        const run = this.runRow(row.published_run as string);
        return run === undefined ? [] : [{ task: this.taskOf(row), run: this.runOf(run) }];
      }),
    );
  }

  private scheduleRow(task: string): ScheduleRow | undefined {
    return this.host.q("SELECT * FROM task_schedules WHERE task = ?").get(task) as ScheduleRow | undefined;
  }
}
