// The TaskLedger on the PostgreSQL catalog's connection: each write one transaction behind the catalog's write lock
// (pg-connection.ts), publication in the same transaction as the versions it makes. A port of sqlite-task-ledger.ts:
// same statements where PostgreSQL allows, same errors, same events. Text order is byte order (COLLATE "C"), as
// SQLite's BINARY, whatever the server's default collation.

import { CairnError, ErrorCode } from "../../errors.js";
import type { InsertOptions, NewVersion, VersionRecord } from "./catalog.js";
import type { PgTx } from "./pg-connection.js";
import type { PgLedgerHost } from "./pg-hosts.js";
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

/** A task with its current definition (one join instead of SQLite's statement per task). */
interface TaskRow {
  name: string;
  current_version: number;
  last_generation: number;
  published_run: string | null;
  published_generation: number;
  latest_success: string | null;
  definition: string;
  created_at: string;
  actor: string | null;
}

const TASK_SELECT = `SELECT t.name, t.current_version, t.last_generation, t.published_run, t.published_generation,
    t.latest_success, d.definition, d.created_at, d.actor
  FROM tasks t JOIN task_definitions d ON d.name = t.name AND d.version = t.current_version`;

export class PgTaskLedger implements TaskLedger {
  constructor(private readonly host: PgLedgerHost) {}

  private now(): number {
    return this.host.now?.() ?? Date.now();
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  defineTask(
    name: string,
    definition: unknown,
    options: { expectedVersion?: number | undefined; actor?: string | undefined },
  ): Promise<TaskDefinitionRecord> {
    return this.host.conn.write(async (tx) => {
      const current = (
        await tx.one<{ current_version: number }>("SELECT current_version FROM tasks WHERE name = $1", [name])
      )?.current_version;
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
      const last = (
        await tx.one<{ v: number | null }>("SELECT max(version) AS v FROM task_definitions WHERE name = $1", [name])
      )?.v;
      const version = (last ?? 0) + 1;
      const createdAt = this.iso();
      await tx.run(
        "INSERT INTO task_definitions (name, version, definition, created_at, actor) VALUES ($1, $2, $3, $4, $5)",
        [name, version, JSON.stringify(definition), createdAt, options.actor ?? null],
      );
      await tx.run(
        `INSERT INTO tasks (name, current_version) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET current_version = excluded.current_version`,
        [name, version],
      );
      await this.host.appendEvent(tx, {
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

  async task(name: string): Promise<TaskRecord | undefined> {
    const [row] = await this.host.conn.rows<TaskRow>(`${TASK_SELECT} WHERE t.name = $1`, [name]);
    return row === undefined ? undefined : taskOf(row);
  }

  async taskVersion(name: string, version: number): Promise<TaskDefinitionRecord | undefined> {
    const [row] = await this.host.conn.rows<DefinitionRow>(
      "SELECT * FROM task_definitions WHERE name = $1 AND version = $2",
      [name, version],
    );
    return row === undefined ? undefined : { ...row, definition: JSON.parse(row.definition) };
  }

  async tasks(): Promise<TaskRecord[]> {
    return (await this.host.conn.rows<TaskRow>(`${TASK_SELECT} ORDER BY t.name COLLATE "C"`)).map(taskOf);
  }

  startRun(input: {
    runId: string;
    task: string;
    definitionVersion: number;
    snapshot: Record<string, string>;
    owner: Owner;
  }): Promise<RunRecord> {
    return this.host.conn.write(async (tx) => {
      const task = await tx.one<{ last_generation: number }>("SELECT last_generation FROM tasks WHERE name = $1", [
        input.task,
      ]);
      if (task === undefined) throw noTask(input.task);
      const generation = task.last_generation + 1;
      await tx.run("UPDATE tasks SET last_generation = $1 WHERE name = $2", [generation, input.task]);
      // Behind the write lock, max + 1 is as safe as SQLite's: no other write runs between the read and the insert.
      const seq = ((await tx.one<{ s: number | null }>("SELECT max(seq) AS s FROM task_runs"))?.s ?? 0) + 1;
      const row = await tx.one<RunRow>(
        `INSERT INTO task_runs (id, seq, task, generation, definition_version, state, snapshot, owner_host,
           owner_pid, heartbeat_at, started_at)
         VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8, $9, $10)
         RETURNING *`,
        [
          input.runId,
          seq,
          input.task,
          generation,
          input.definitionVersion,
          JSON.stringify(input.snapshot),
          input.owner.host,
          input.owner.pid,
          this.now(),
          this.iso(),
        ],
      );
      return runOf(row as RunRow);
    });
  }

  resumeRun(runId: string, owner: Owner, isAlive: (owner: Owner) => boolean): Promise<RunRecord> {
    // `isAlive` looks at processes only (no writes), so running it again when the transaction is retried is harmless.
    return this.host.conn.write(async (tx) => {
      const row = await runRow(tx, runId);
      if (row === undefined) throw noRun(runId);
      const run = runOf(row);
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
      const resumed = await tx.one<RunRow>(
        `UPDATE task_runs SET state = 'running', owner_host = $1, owner_pid = $2, heartbeat_at = $3, error = NULL,
           finished_at = NULL WHERE id = $4
         RETURNING *`,
        [owner.host, owner.pid, this.now(), runId],
      );
      return runOf(resumed as RunRow);
    });
  }

  async recordProgress(runId: string, progress: Record<string, unknown>): Promise<void> {
    await this.host.conn.write((tx) =>
      tx.run("UPDATE task_runs SET progress = $1, heartbeat_at = $2 WHERE id = $3", [
        JSON.stringify(progress),
        this.now(),
        runId,
      ]),
    );
  }

  async heartbeat(runId: string): Promise<void> {
    await this.host.conn.write((tx) =>
      tx.run("UPDATE task_runs SET heartbeat_at = $1 WHERE id = $2 AND state = 'running'", [this.now(), runId]),
    );
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
    return this.host.conn.write(async (tx) => {
      const by = outcome.actor === undefined ? {} : { actor: outcome.actor };
      for (const key of outcome.reused ?? []) {
        await tx.run("UPDATE step_cache SET used_at = $1, hits = hits + 1 WHERE key = $2", [this.now(), key]);
      }
      const row = await runRow(tx, runId);
      if (row === undefined) throw noRun(runId);
      const task = await tx.one<{ published_generation: number }>(
        "SELECT published_generation FROM tasks WHERE name = $1",
        [row.task],
      );
      if (task === undefined) throw noTask(row.task);
      const newest = row.generation >= task.published_generation;
      const steps: VersionRecord[] = [];
      let runArtifact: VersionRecord | null = null;
      if (publication !== undefined && newest) {
        if (publication.fence !== undefined) await this.host.checkFence(tx, publication.fence);
        const made = { ...by, operation: "task_run", detail: { run_id: runId, task: row.task } };
        for (const version of publication.steps) steps.push(await this.publishVersion(tx, version, made));
        runArtifact = await this.publishVersion(tx, publication.run, made);
        await tx.run(
          `UPDATE tasks SET published_run = $1, published_generation = $2,
             latest_success = CASE WHEN $3::boolean THEN $1 ELSE latest_success END WHERE name = $4`,
          [runId, row.generation, outcome.state === "succeeded", row.task],
        );
      }
      const published = publication !== undefined && newest;
      // GREATEST for SQLite's two-argument max(): a run that published once stays published.
      const finished = await tx.one<RunRow>(
        `UPDATE task_runs SET state = $1, brief = $2, error = $3, run_artifact = coalesce($4, run_artifact),
           published = GREATEST(published, $5), finished_at = $6, heartbeat_at = $7 WHERE id = $8
         RETURNING *`,
        [
          outcome.state,
          JSON.stringify(outcome.brief),
          outcome.error === undefined ? null : JSON.stringify(outcome.error),
          runArtifact?.artifact_id ?? null,
          published ? 1 : 0,
          this.iso(),
          this.now(),
          runId,
        ],
      );
      const run = runOf(finished as RunRow);
      await this.host.appendEvent(tx, {
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
  private async publishVersion(tx: PgTx, version: NewVersion, event: InsertOptions["event"]): Promise<VersionRecord> {
    const current = await this.host.current(tx, version.name);
    const dependencies = await this.host.resolveDependencies(tx, version.dependencies);
    if (
      current !== undefined &&
      current.sha256 === version.sha256 &&
      current.dependencies.length === dependencies.length &&
      current.dependencies.every((id, i) => id === dependencies[i])
    ) {
      return current;
    }
    return this.host.insertTx(
      tx,
      { ...version, dependencies },
      current === undefined ? { event } : { expectedVersion: current.version, event },
    );
  }

  async run(runId: string): Promise<RunRecord | undefined> {
    const [row] = await this.host.conn.rows<RunRow>("SELECT * FROM task_runs WHERE id = $1", [runId]);
    return row === undefined ? undefined : runOf(row);
  }

  async runs(task: string, limit: number): Promise<RunRecord[]> {
    return (
      await this.host.conn.rows<RunRow>("SELECT * FROM task_runs WHERE task = $1 ORDER BY seq DESC LIMIT $2", [
        task,
        limit,
      ])
    ).map(runOf);
  }

  async cacheGet(key: string): Promise<CacheEntry | undefined> {
    // A read: the use is recorded by finishRun (outcome.reused), in the run's one closing write.
    const [row] = await this.host.conn.rows<Omit<CacheEntry, "meta"> & { meta: string }>(
      "SELECT key, sha256, bytes, kind, media_type, meta, hits FROM step_cache WHERE key = $1",
      [key],
    );
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
  }

  cachePut(entry: Omit<CacheEntry, "hits">, bounds: CacheBounds): Promise<number> {
    return this.host.conn.write(async (tx) => {
      const now = this.now();
      await tx.run(
        `INSERT INTO step_cache (key, sha256, bytes, kind, media_type, meta, created_at, used_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (key) DO UPDATE SET sha256 = excluded.sha256, bytes = excluded.bytes, kind = excluded.kind,
           media_type = excluded.media_type, meta = excluded.meta, used_at = excluded.used_at`,
        [entry.key, entry.sha256, entry.bytes, entry.kind, entry.media_type, JSON.stringify(entry.meta), now, now],
      );
      // Least recently used first, until both bounds hold; the entry just added goes last.
      const sizes = await tx.one<{ count: number; total: number }>(
        "SELECT count(*) AS count, coalesce(sum(bytes), 0) AS total FROM step_cache",
      );
      let count = sizes?.count ?? 0;
      let total = sizes?.total ?? 0;
      let evicted = 0;
      while (count > bounds.maxEntries || total > bounds.maxBytes) {
        const batch = await tx.rows<{ key: string; bytes: number }>(
          `SELECT key, bytes FROM step_cache WHERE key <> $1 ORDER BY used_at, key COLLATE "C" LIMIT 64`,
          [entry.key],
        );
        if (batch.length === 0) break;
        // One DELETE per batch rather than SQLite's one per entry: each statement here is a round trip.
        const victims: string[] = [];
        for (const victim of batch) {
          if (count <= bounds.maxEntries && total <= bounds.maxBytes) break;
          victims.push(victim.key);
          count -= 1;
          total -= victim.bytes;
          evicted += 1;
        }
        await tx.run("DELETE FROM step_cache WHERE key = ANY($1::text[])", [victims]);
      }
      return evicted;
    });
  }

  cacheClear(): Promise<number> {
    return this.host.conn.write((tx) => tx.run("DELETE FROM step_cache"));
  }

  async cacheDrop(key: string): Promise<void> {
    await this.host.conn.write((tx) => tx.run("DELETE FROM step_cache WHERE key = $1", [key]));
  }

  acquireLease(key: string, owner: Owner, ttlMs: number, isAlive: (owner: Owner) => boolean): Promise<LeaseAnswer> {
    // `isAlive` only looks at processes, and a retried transaction draws a fresh token: both safe to run again.
    return this.host.conn.write(async (tx) => {
      const now = this.now();
      const held = await tx.one<{ owner_host: string; owner_pid: number; expires_at: number }>(
        "SELECT owner_host, owner_pid, expires_at FROM step_leases WHERE key = $1",
        [key],
      );
      if (held !== undefined && held.expires_at > now) {
        const holder = { host: held.owner_host, pid: held.owner_pid };
        if (isAlive(holder)) return { holder, expires_at: held.expires_at };
      }
      const token = `${owner.pid}-${now}-${Math.random().toString(36).slice(2)}`;
      await tx.run(
        `INSERT INTO step_leases (key, token, owner_host, owner_pid, expires_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (key) DO UPDATE SET token = excluded.token, owner_host = excluded.owner_host,
           owner_pid = excluded.owner_pid, expires_at = excluded.expires_at`,
        [key, token, owner.host, owner.pid, now + ttlMs],
      );
      return { token };
    });
  }

  renewLease(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.host.conn.write(
      async (tx) =>
        (await tx.run("UPDATE step_leases SET expires_at = $1 WHERE key = $2 AND token = $3", [
          this.now() + ttlMs,
          key,
          token,
        ])) === 1,
    );
  }

  async releaseLease(key: string, token: string): Promise<void> {
    await this.host.conn.write((tx) => tx.run("DELETE FROM step_leases WHERE key = $1 AND token = $2", [key, token]));
  }

  approve(artifactId: string, approver: string): Promise<Approval> {
    return this.host.conn.write(async (tx) => {
      const approvedAt = this.iso();
      await tx.run("INSERT INTO approvals (artifact_id, approver, approved_at) VALUES ($1, $2, $3)", [
        artifactId,
        approver,
        approvedAt,
      ]);
      await this.host.appendEvent(tx, {
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
    return this.host.conn.write(async (tx) => {
      const changes = await tx.run(
        "UPDATE approvals SET revoked_at = $1, revoked_by = $2 WHERE artifact_id = $3 AND revoked_at IS NULL",
        [this.iso(), actor, artifactId],
      );
      if (changes > 0) {
        await this.host.appendEvent(tx, {
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

  async approvals(artifactIds: readonly string[]): Promise<Approval[]> {
    // One statement for all ids; grouped back into the order SQLite gives (by id asked, then by approval).
    const ids = [...new Set(artifactIds)];
    if (ids.length === 0) return [];
    const rows = await this.host.conn.rows<Approval>(
      `SELECT artifact_id, approver, approved_at FROM approvals
       WHERE artifact_id = ANY($1::text[]) AND revoked_at IS NULL ORDER BY id`,
      [ids],
    );
    return ids.flatMap((id) => rows.filter((row) => row.artifact_id === id));
  }

  // --- skills: reusable plans distilled from successful runs (tasks/skills.ts) ----------------------------------

  putSkill(
    name: string,
    skill: unknown,
    description: string,
    options: { expectedVersion?: number | undefined; actor?: string | undefined },
  ): Promise<SkillRecord> {
    return this.host.conn.write(async (tx) => {
      const current = (
        await tx.one<{ current_version: number }>("SELECT current_version FROM skill_names WHERE name = $1", [name])
      )?.current_version;
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
      const last = (await tx.one<{ v: number | null }>("SELECT max(version) AS v FROM skills WHERE name = $1", [name]))
        ?.v;
      const version = (last ?? 0) + 1;
      const createdAt = this.iso();
      await tx.run("INSERT INTO skills (name, version, skill, description, created_at) VALUES ($1, $2, $3, $4, $5)", [
        name,
        version,
        JSON.stringify(skill),
        description,
        createdAt,
      ]);
      await this.host.appendEvent(tx, {
        ...(options.actor === undefined ? {} : { actor: options.actor }),
        operation: "skill_distill",
        ref: name,
        artifact_id: null,
        version,
        detail: {},
      });
      await tx.run(
        `INSERT INTO skill_names (name, current_version) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET current_version = excluded.current_version`,
        [name, version],
      );
      return { name, version, current_version: version, skill, description, created_at: createdAt };
    });
  }

  async skill(name: string, version?: number): Promise<SkillRecord | undefined> {
    const [row] = await this.host.conn.rows<SkillRow>(
      `SELECT s.*, n.current_version FROM skill_names n JOIN skills s ON s.name = n.name
       WHERE n.name = $1 AND s.version = coalesce($2::integer, n.current_version)`,
      [name, version ?? null],
    );
    return row === undefined ? undefined : skillOf(row);
  }

  async skills(): Promise<SkillRecord[]> {
    return (
      await this.host.conn.rows<SkillRow>(
        `SELECT s.*, n.current_version FROM skill_names n JOIN skills s
           ON s.name = n.name AND s.version = n.current_version
         ORDER BY s.created_at COLLATE "C" DESC, s.name COLLATE "C"`,
      )
    ).map(skillOf);
  }

  // --- Schedules and verification ------------------------------------------------------------------------------

  async schedule(task: string): Promise<ScheduleRecord | undefined> {
    const [row] = await this.host.conn.rows<ScheduleRow>("SELECT * FROM task_schedules WHERE task = $1", [task]);
    return row === undefined ? undefined : scheduleOf(row);
  }

  async schedules(options: { after?: string | undefined; limit: number }): Promise<ScheduleRecord[]> {
    return (
      await this.host.conn.rows<ScheduleRow>(
        `SELECT * FROM task_schedules WHERE task COLLATE "C" > $1 ORDER BY task COLLATE "C" LIMIT $2`,
        [options.after ?? "", options.limit],
      )
    ).map(scheduleOf);
  }

  putSchedule(
    task: string,
    settings: unknown,
    options: { expectedVersion?: number | undefined; nextDue: number | null; actor?: string | undefined },
  ): Promise<ScheduleRecord> {
    return this.host.conn.write(async (tx) => {
      if ((await tx.one("SELECT 1 FROM tasks WHERE name = $1", [task])) === undefined) throw noTask(task);
      const current = (await tx.one<{ version: number }>("SELECT version FROM task_schedules WHERE task = $1", [task]))
        ?.version;
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
      // last_checked holds the time of the last claim.
      const row = await tx.one<ScheduleRow>(
        `INSERT INTO task_schedules (task, version, schedule, updated_at, next_due) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (task) DO UPDATE SET version = excluded.version, schedule = excluded.schedule,
           updated_at = excluded.updated_at, next_due = excluded.next_due
         RETURNING *`,
        [task, version, JSON.stringify(settings), this.iso(), options.nextDue],
      );
      await this.host.appendEvent(tx, {
        ...(options.actor === undefined ? {} : { actor: options.actor }),
        operation: "task_schedule",
        ref: task,
        artifact_id: null,
        version,
        detail: {},
      });
      return scheduleOf(row as ScheduleRow);
    });
  }

  claimSchedule(task: string, seen: ScheduleSlot, claim: ScheduleSlot, at: number): Promise<boolean> {
    // IS NOT DISTINCT FROM is SQLite's `IS`: equal, or both null.
    return this.host.conn.write(
      async (tx) =>
        (await tx.run(
          `UPDATE task_schedules SET next_due = $1, last_run = $2, last_checked = $3
           WHERE task = $4 AND next_due IS NOT DISTINCT FROM $5::bigint AND last_run IS NOT DISTINCT FROM $6::text`,
          [claim.next_due, claim.last_run, at, task, seen.next_due, seen.last_run],
        )) === 1,
    );
  }

  publishedTasks(options: { after?: string | undefined; limit: number }): Promise<PublishedTask[]> {
    // Two statements of one snapshot: the tasks, then their published runs (SQLite reads a run per task).
    return this.host.conn.read(async (tx) => {
      const tasks = await tx.rows<TaskRow>(
        `${TASK_SELECT} WHERE t.published_run IS NOT NULL AND t.name COLLATE "C" > $1
         ORDER BY t.name COLLATE "C" LIMIT $2`,
        [options.after ?? "", options.limit],
      );
      if (tasks.length === 0) return [];
      const runs = new Map(
        (
          await tx.rows<RunRow>("SELECT * FROM task_runs WHERE id = ANY($1::text[])", [
            tasks.map((task) => task.published_run as string),
          ])
        ).map((row) => [row.id, row]),
      );
      return tasks.flatMap((row) => {
        const run = runs.get(row.published_run as string);
        return run === undefined ? [] : [{ task: taskOf(row), run: runOf(run) }];
      });
    });
  }
}

function runRow(tx: PgTx, runId: string): Promise<RunRow | undefined> {
  return tx.one<RunRow>("SELECT * FROM task_runs WHERE id = $1", [runId]);
}

function taskOf(row: TaskRow): TaskRecord {
  return {
    name: row.name,
    current_version: row.current_version,
    definition: {
      name: row.name,
      version: row.current_version,
      definition: JSON.parse(row.definition),
      created_at: row.created_at,
      actor: row.actor,
    },
    published_run: row.published_run,
    published_generation: row.published_generation,
    latest_success: row.latest_success,
    last_generation: row.last_generation,
  };
}

function runOf(row: RunRow): RunRecord {
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
