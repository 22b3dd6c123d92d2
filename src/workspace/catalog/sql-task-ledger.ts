// The TaskLedger on either catalog, written once over the SQL port (decision 0270): each method one transaction
// (writes ordered with every other write of the catalog), publication in the same transaction as the versions it
// makes. Text order is byte order (BYTEWISE), as SQLite's BINARY, whatever PostgreSQL's default collation.
// Over 500 lines: it is the whole TaskLedger contract (definitions, runs, step cache and leases, approvals, skills,
// schedules) as one transaction per method; it was two files of about 680 lines each.
import { CairnError, ErrorCode } from "../../errors.js";
import type { InsertOptions, NewVersion, VersionRecord } from "./catalog.js";
import type { NewEvent } from "./event-log.js";
import { BYTEWISE, type CatalogSql, inTexts, one, type Rule, rows, run, sql } from "./sql.js";
import type {
  Approval,
  CacheBounds,
  CacheEntry,
  FinishedRun,
  LeaseAnswer,
  Owner,
  Publication,
  PublishedTask,
  RunOutcome,
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

/** What the ledger borrows from the catalog it is part of: its connection and, as rules, the catalog's own steps. */
export interface LedgerHost {
  sql: CatalogSql;
  /** Milliseconds since the epoch. @default Date.now */
  now?(): number;
  /** Inserts a version (expected version checked). */
  insert(version: NewVersion, options: InsertOptions): Rule<VersionRecord>;
  /** Refs to ids, NOT_FOUND for any missing. */
  resolveDependencies(refs: readonly string[]): Rule<string[]>;
  /**
   * FENCED unless `ticket` is the resource's current claim ticket (held by `holder`, when given); without a ticket,
   * CLAIM_HELD while another holder's claim on it is unexpired.
   */
  checkFence(fence: { resource: string; ticket?: number | undefined; holder?: string | undefined }): Rule<void>;
  /** The current version of a name. */
  current(name: string): Rule<VersionRecord | undefined>;
  /** Records the write in the catalog's event log. */
  appendEvent(event: NewEvent): Rule<void>;
}

/** A task with its current definition. */
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

const TASK_SELECT = sql`SELECT t.name, t.current_version, t.last_generation, t.published_run,
    t.published_generation, t.latest_success, d.definition, d.created_at, d.actor
  FROM tasks t JOIN task_definitions d ON d.name = t.name AND d.version = t.current_version`;

const runRow = (runId: string) => one<RunRow>(sql`SELECT * FROM task_runs WHERE id = ${runId}`);

export class SqlTaskLedger implements TaskLedger {
  constructor(private readonly host: LedgerHost) {}

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
    const self = this;
    return this.host.sql.write(function* (): Rule<TaskDefinitionRecord> {
      const current = (yield* one<{ current_version: number }>(
        sql`SELECT current_version FROM tasks WHERE name = ${name}`,
      ))?.current_version;
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
      const last = (yield* one<{ v: number | null }>(
        sql`SELECT max(version) AS v FROM task_definitions WHERE name = ${name}`,
      ))?.v;
      const version = (last ?? 0) + 1;
      const createdAt = self.iso();
      yield* run(
        sql`INSERT INTO task_definitions (name, version, definition, created_at, actor)
            VALUES (${name}, ${version}, ${JSON.stringify(definition)}, ${createdAt}, ${options.actor ?? null})`,
      );
      yield* run(
        sql`INSERT INTO tasks (name, current_version) VALUES (${name}, ${version})
            ON CONFLICT (name) DO UPDATE SET current_version = excluded.current_version`,
      );
      yield* self.host.appendEvent({
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
    const [row] = await this.host.sql.select<TaskRow>(sql`${TASK_SELECT} WHERE t.name = ${name}`);
    return row === undefined ? undefined : taskOf(row);
  }

  async taskVersion(name: string, version: number): Promise<TaskDefinitionRecord | undefined> {
    const [row] = await this.host.sql.select<DefinitionRow>(
      sql`SELECT * FROM task_definitions WHERE name = ${name} AND version = ${version}`,
    );
    return row === undefined ? undefined : { ...row, definition: JSON.parse(row.definition) };
  }

  async tasks(): Promise<TaskRecord[]> {
    return (await this.host.sql.select<TaskRow>(sql`${TASK_SELECT} ORDER BY t.name ${BYTEWISE}`)).map(taskOf);
  }

  startRun(input: {
    runId: string;
    task: string;
    definitionVersion: number;
    snapshot: Record<string, string>;
    owner: Owner;
  }): Promise<RunRecord> {
    const self = this;
    return this.host.sql.write(function* (): Rule<RunRecord> {
      const task = yield* one<{ last_generation: number }>(
        sql`SELECT last_generation FROM tasks WHERE name = ${input.task}`,
      );
      if (task === undefined) throw noTask(input.task);
      const generation = task.last_generation + 1;
      yield* run(sql`UPDATE tasks SET last_generation = ${generation} WHERE name = ${input.task}`);
      // Behind the write lock, max + 1 is safe: no other write runs between the read and the insert.
      const seq = ((yield* one<{ s: number | null }>(sql`SELECT max(seq) AS s FROM task_runs`))?.s ?? 0) + 1;
      const row = yield* one<RunRow>(
        sql`INSERT INTO task_runs (id, seq, task, generation, definition_version, state, snapshot, owner_host,
              owner_pid, heartbeat_at, started_at)
            VALUES (${input.runId}, ${seq}, ${input.task}, ${generation}, ${input.definitionVersion}, 'running',
              ${JSON.stringify(input.snapshot)}, ${input.owner.host}, ${input.owner.pid}, ${self.now()}, ${self.iso()})
            RETURNING *`,
      );
      return runOf(row as RunRow);
    });
  }

  resumeRun(runId: string, owner: Owner, isAlive: (owner: Owner) => boolean): Promise<RunRecord> {
    const self = this;
    // `isAlive` looks at processes only (no writes), so running it again when the transaction is retried is harmless.
    return this.host.sql.write(function* (): Rule<RunRecord> {
      const row = yield* runRow(runId);
      if (row === undefined) throw noRun(runId);
      const found = runOf(row);
      if (found.state === "succeeded") {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `run ${runId} succeeded: there is nothing to resume. Reopen it with task_status {run_id}, or call task_run without resume_from for a new run`,
        );
      }
      if (found.state === "running" && isAlive(found.owner)) {
        throw new CairnError(
          ErrorCode.INVALID_ARGUMENT,
          `run ${runId} is still running in process ${found.owner.pid} on ${found.owner.host}: wait for it (task_status {run_id}) rather than resuming it`,
        );
      }
      const resumed = yield* one<RunRow>(
        sql`UPDATE task_runs SET state = 'running', owner_host = ${owner.host}, owner_pid = ${owner.pid},
              heartbeat_at = ${self.now()}, error = NULL, finished_at = NULL
            WHERE id = ${runId}
            RETURNING *`,
      );
      return runOf(resumed as RunRow);
    });
  }

  async recordProgress(runId: string, progress: Record<string, unknown>): Promise<void> {
    const now = this.now();
    await this.host.sql.write(() =>
      run(sql`UPDATE task_runs SET progress = ${JSON.stringify(progress)}, heartbeat_at = ${now} WHERE id = ${runId}`),
    );
  }

  async heartbeat(runId: string): Promise<void> {
    const now = this.now();
    await this.host.sql.write(() =>
      run(sql`UPDATE task_runs SET heartbeat_at = ${now} WHERE id = ${runId} AND state = 'running'`),
    );
  }

  finishRun(runId: string, outcome: RunOutcome, publication?: Publication): Promise<FinishedRun> {
    const self = this;
    return this.host.sql.write(function* (): Rule<FinishedRun> {
      const by = outcome.actor === undefined ? {} : { actor: outcome.actor };
      for (const key of outcome.reused ?? []) {
        yield* run(sql`UPDATE step_cache SET used_at = ${self.now()}, hits = hits + 1 WHERE key = ${key}`);
      }
      const row = yield* runRow(runId);
      if (row === undefined) throw noRun(runId);
      const task = yield* one<{ published_generation: number }>(
        sql`SELECT published_generation FROM tasks WHERE name = ${row.task}`,
      );
      if (task === undefined) throw noTask(row.task);
      const newest = row.generation >= task.published_generation;
      const steps: VersionRecord[] = [];
      let runArtifact: VersionRecord | null = null;
      if (publication !== undefined && newest) {
        if (publication.fence !== undefined) yield* self.host.checkFence(publication.fence);
        const made = { ...by, operation: "task_run", detail: { run_id: runId, task: row.task } };
        for (const version of publication.steps) steps.push(yield* self.publishVersion(version, made));
        runArtifact = yield* self.publishVersion(publication.run, made);
        const success = outcome.state === "succeeded" ? runId : null;
        yield* run(
          sql`UPDATE tasks SET published_run = ${runId}, published_generation = ${row.generation},
                latest_success = coalesce(CAST(${success} AS TEXT), latest_success)
              WHERE name = ${row.task}`,
        );
      }
      const published = publication !== undefined && newest;
      // A run that published once stays published.
      const finished = yield* one<RunRow>(
        sql`UPDATE task_runs SET state = ${outcome.state}, brief = ${JSON.stringify(outcome.brief)},
              error = ${outcome.error === undefined ? null : JSON.stringify(outcome.error)},
              run_artifact = coalesce(CAST(${runArtifact?.artifact_id ?? null} AS TEXT), run_artifact),
              published = CASE WHEN published = 1 THEN 1 ELSE ${published ? 1 : 0} END,
              finished_at = ${self.iso()}, heartbeat_at = ${self.now()}
            WHERE id = ${runId}
            RETURNING *`,
      );
      const finishedRun = runOf(finished as RunRow);
      yield* self.host.appendEvent({
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
      return { run: finishedRun, published: finishedRun.published, steps, runArtifact };
    });
  }

  /** The name's current version when it holds the same bytes and dependencies; otherwise a new version. */
  private *publishVersion(version: NewVersion, event: InsertOptions["event"]): Rule<VersionRecord> {
    const current = yield* this.host.current(version.name);
    const dependencies = yield* this.host.resolveDependencies(version.dependencies);
    if (
      current !== undefined &&
      current.sha256 === version.sha256 &&
      current.dependencies.length === dependencies.length &&
      current.dependencies.every((id, i) => id === dependencies[i])
    ) {
      return current;
    }
    return yield* this.host.insert(
      { ...version, dependencies },
      current === undefined ? { event } : { expectedVersion: current.version, event },
    );
  }

  async run(runId: string): Promise<RunRecord | undefined> {
    const [row] = await this.host.sql.select<RunRow>(sql`SELECT * FROM task_runs WHERE id = ${runId}`);
    return row === undefined ? undefined : runOf(row);
  }

  async runs(task: string, limit: number): Promise<RunRecord[]> {
    return (
      await this.host.sql.select<RunRow>(
        sql`SELECT * FROM task_runs WHERE task = ${task} ORDER BY seq DESC LIMIT ${limit}`,
      )
    ).map(runOf);
  }

  async cacheGet(key: string): Promise<CacheEntry | undefined> {
    // A read: the use is recorded by finishRun (outcome.reused), in the run's one closing write.
    const [row] = await this.host.sql.select<Omit<CacheEntry, "meta"> & { meta: string }>(
      sql`SELECT key, sha256, bytes, kind, media_type, meta, hits FROM step_cache WHERE key = ${key}`,
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
    const self = this;
    return this.host.sql.write(function* (): Rule<number> {
      const now = self.now();
      yield* run(
        sql`INSERT INTO step_cache (key, sha256, bytes, kind, media_type, meta, created_at, used_at)
            VALUES (${entry.key}, ${entry.sha256}, ${entry.bytes}, ${entry.kind}, ${entry.media_type},
              ${JSON.stringify(entry.meta)}, ${now}, ${now})
            ON CONFLICT (key) DO UPDATE SET sha256 = excluded.sha256, bytes = excluded.bytes, kind = excluded.kind,
              media_type = excluded.media_type, meta = excluded.meta, used_at = excluded.used_at`,
      );
      // Least recently used first, until both bounds hold; the entry just added goes last.
      const sizes = yield* one<{ count: number; total: number }>(
        sql`SELECT count(*) AS count, coalesce(sum(bytes), 0) AS total FROM step_cache`,
      );
      let count = sizes?.count ?? 0;
      let total = sizes?.total ?? 0;
      let evicted = 0;
      while (count > bounds.maxEntries || total > bounds.maxBytes) {
        const batch = yield* rows<{ key: string; bytes: number }>(
          sql`SELECT key, bytes FROM step_cache WHERE key <> ${entry.key} ORDER BY used_at, key ${BYTEWISE} LIMIT 64`,
        );
        if (batch.length === 0) break;
        // One DELETE per batch: on PostgreSQL each statement is a round trip.
        const victims: string[] = [];
        for (const victim of batch) {
          if (count <= bounds.maxEntries && total <= bounds.maxBytes) break;
          victims.push(victim.key);
          count -= 1;
          total -= victim.bytes;
          evicted += 1;
        }
        yield* run(sql`DELETE FROM step_cache WHERE key ${inTexts(victims)}`);
      }
      return evicted;
    });
  }

  cacheClear(): Promise<number> {
    return this.host.sql.write(() => run(sql`DELETE FROM step_cache`));
  }

  async cacheDrop(key: string): Promise<void> {
    await this.host.sql.write(() => run(sql`DELETE FROM step_cache WHERE key = ${key}`));
  }

  acquireLease(key: string, owner: Owner, ttlMs: number, isAlive: (owner: Owner) => boolean): Promise<LeaseAnswer> {
    const self = this;
    // `isAlive` only looks at processes, and a retried transaction draws a fresh token: both safe to run again.
    return this.host.sql.write(function* (): Rule<LeaseAnswer> {
      const now = self.now();
      const held = yield* one<{ owner_host: string; owner_pid: number; expires_at: number }>(
        sql`SELECT owner_host, owner_pid, expires_at FROM step_leases WHERE key = ${key}`,
      );
      if (held !== undefined && held.expires_at > now) {
        const holder = { host: held.owner_host, pid: held.owner_pid };
        if (isAlive(holder)) return { holder, expires_at: held.expires_at };
      }
      const token = `${owner.pid}-${now}-${Math.random().toString(36).slice(2)}`;
      yield* run(
        sql`INSERT INTO step_leases (key, token, owner_host, owner_pid, expires_at)
            VALUES (${key}, ${token}, ${owner.host}, ${owner.pid}, ${now + ttlMs})
            ON CONFLICT (key) DO UPDATE SET token = excluded.token, owner_host = excluded.owner_host,
              owner_pid = excluded.owner_pid, expires_at = excluded.expires_at`,
      );
      return { token };
    });
  }

  renewLease(key: string, token: string, ttlMs: number): Promise<boolean> {
    const expiresAt = this.now() + ttlMs;
    return this.host.sql.write(function* () {
      return (
        (yield* run(sql`UPDATE step_leases SET expires_at = ${expiresAt} WHERE key = ${key} AND token = ${token}`)) ===
        1
      );
    });
  }

  async releaseLease(key: string, token: string): Promise<void> {
    await this.host.sql.write(() => run(sql`DELETE FROM step_leases WHERE key = ${key} AND token = ${token}`));
  }

  approve(artifactId: string, approver: string): Promise<Approval> {
    const self = this;
    return this.host.sql.write(function* (): Rule<Approval> {
      const approvedAt = self.iso();
      yield* run(
        sql`INSERT INTO approvals (artifact_id, approver, approved_at) VALUES (${artifactId}, ${approver}, ${approvedAt})`,
      );
      yield* self.host.appendEvent({
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
    const self = this;
    return this.host.sql.write(function* (): Rule<number> {
      const changes = yield* run(
        sql`UPDATE approvals SET revoked_at = ${self.iso()}, revoked_by = ${actor}
            WHERE artifact_id = ${artifactId} AND revoked_at IS NULL`,
      );
      if (changes > 0) {
        yield* self.host.appendEvent({
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
    // One statement for all ids, grouped back by id asked, then by approval.
    const ids = [...new Set(artifactIds)];
    if (ids.length === 0) return [];
    const found = await this.host.sql.select<Approval>(
      sql`SELECT artifact_id, approver, approved_at FROM approvals
          WHERE artifact_id ${inTexts(ids)} AND revoked_at IS NULL ORDER BY id`,
    );
    return ids.flatMap((id) => found.filter((row) => row.artifact_id === id));
  }

  // --- skills: reusable plans distilled from successful runs (tasks/skills.ts) ----------------------------------

  putSkill(
    name: string,
    skill: unknown,
    description: string,
    options: { expectedVersion?: number | undefined; actor?: string | undefined },
  ): Promise<SkillRecord> {
    const self = this;
    return this.host.sql.write(function* (): Rule<SkillRecord> {
      const current = (yield* one<{ current_version: number }>(
        sql`SELECT current_version FROM skill_names WHERE name = ${name}`,
      ))?.current_version;
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
      const last = (yield* one<{ v: number | null }>(sql`SELECT max(version) AS v FROM skills WHERE name = ${name}`))
        ?.v;
      const version = (last ?? 0) + 1;
      const createdAt = self.iso();
      yield* run(
        sql`INSERT INTO skills (name, version, skill, description, created_at)
            VALUES (${name}, ${version}, ${JSON.stringify(skill)}, ${description}, ${createdAt})`,
      );
      yield* self.host.appendEvent({
        ...(options.actor === undefined ? {} : { actor: options.actor }),
        operation: "skill_distill",
        ref: name,
        artifact_id: null,
        version,
        detail: {},
      });
      yield* run(
        sql`INSERT INTO skill_names (name, current_version) VALUES (${name}, ${version})
            ON CONFLICT (name) DO UPDATE SET current_version = excluded.current_version`,
      );
      return { name, version, current_version: version, skill, description, created_at: createdAt };
    });
  }

  async skill(name: string, version?: number): Promise<SkillRecord | undefined> {
    const [row] = await this.host.sql.select<SkillRow>(
      sql`SELECT s.*, n.current_version FROM skill_names n JOIN skills s ON s.name = n.name
          WHERE n.name = ${name} AND s.version = coalesce(CAST(${version ?? null} AS INTEGER), n.current_version)`,
    );
    return row === undefined ? undefined : skillOf(row);
  }

  async skills(): Promise<SkillRecord[]> {
    return (
      await this.host.sql.select<SkillRow>(
        sql`SELECT s.*, n.current_version FROM skill_names n JOIN skills s
              ON s.name = n.name AND s.version = n.current_version
            ORDER BY s.created_at ${BYTEWISE} DESC, s.name ${BYTEWISE}`,
      )
    ).map(skillOf);
  }

  // --- Schedules and verification ------------------------------------------------------------------------------

  async schedule(task: string): Promise<ScheduleRecord | undefined> {
    const [row] = await this.host.sql.select<ScheduleRow>(sql`SELECT * FROM task_schedules WHERE task = ${task}`);
    return row === undefined ? undefined : scheduleOf(row);
  }

  async schedules(options: { after?: string | undefined; limit: number }): Promise<ScheduleRecord[]> {
    return (
      await this.host.sql.select<ScheduleRow>(
        sql`SELECT * FROM task_schedules WHERE task ${BYTEWISE} > ${options.after ?? ""}
            ORDER BY task ${BYTEWISE} LIMIT ${options.limit}`,
      )
    ).map(scheduleOf);
  }

  putSchedule(
    task: string,
    settings: unknown,
    options: { expectedVersion?: number | undefined; nextDue: number | null; actor?: string | undefined },
  ): Promise<ScheduleRecord> {
    const self = this;
    return this.host.sql.write(function* (): Rule<ScheduleRecord> {
      if ((yield* one(sql`SELECT 1 AS one FROM tasks WHERE name = ${task}`)) === undefined) throw noTask(task);
      const current = (yield* one<{ version: number }>(sql`SELECT version FROM task_schedules WHERE task = ${task}`))
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
      const row = yield* one<ScheduleRow>(
        sql`INSERT INTO task_schedules (task, version, schedule, updated_at, next_due)
            VALUES (${task}, ${version}, ${JSON.stringify(settings)}, ${self.iso()}, ${options.nextDue})
            ON CONFLICT (task) DO UPDATE SET version = excluded.version, schedule = excluded.schedule,
              updated_at = excluded.updated_at, next_due = excluded.next_due
            RETURNING *`,
      );
      yield* self.host.appendEvent({
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
    // IS NOT DISTINCT FROM: equal, or both null (SQLite's `IS`).
    return this.host.sql.write(function* () {
      const changed = yield* run(
        sql`UPDATE task_schedules SET next_due = ${claim.next_due}, last_run = ${claim.last_run}, last_checked = ${at}
            WHERE task = ${task} AND next_due IS NOT DISTINCT FROM CAST(${seen.next_due} AS BIGINT)
              AND last_run IS NOT DISTINCT FROM CAST(${seen.last_run} AS TEXT)`,
      );
      return changed === 1;
    });
  }

  publishedTasks(options: { after?: string | undefined; limit: number }): Promise<PublishedTask[]> {
    // Two statements of one snapshot: the tasks, then their published runs.
    return this.host.sql.read(function* (): Rule<PublishedTask[]> {
      const tasks = yield* rows<TaskRow>(
        sql`${TASK_SELECT} WHERE t.published_run IS NOT NULL AND t.name ${BYTEWISE} > ${options.after ?? ""}
            ORDER BY t.name ${BYTEWISE} LIMIT ${options.limit}`,
      );
      if (tasks.length === 0) return [];
      const runs = new Map(
        (yield* rows<RunRow>(
          sql`SELECT * FROM task_runs WHERE id ${inTexts(tasks.map((task) => task.published_run as string))}`,
        )).map((row) => [row.id, row]),
      );
      return tasks.flatMap((row) => {
        const found = runs.get(row.published_run as string);
        return found === undefined ? [] : [{ task: taskOf(row), run: runOf(found) }];
      });
    });
  }
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
