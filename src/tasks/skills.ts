// Skills: the plan of a task's latest successful published run and the contracts of its sources (kind, media type
// and, for tables, the exact ordered schema DuckDB reads), kept as versions of a name; applying one checks new
// sources against those contracts and defines a task pinned to them. Distilling reads the ledger and the sources'
// schemas only: no model call, no step is run again. A skill proves where it came from, not that it suits new data.
import type { Actor } from "../config/identity.js";
import { CairnError, ErrorCode, toCairnError } from "../errors.js";
import type { QueryInputFormat } from "../query/query-engine.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import type { SkillRecord, TaskLedger } from "../workspace/catalog/task-ledger.js";
import type { WorkspaceSql } from "../workspace/sql.js";
import { formatOf } from "../workspace/sql-inputs.js";
import type { Workspace } from "../workspace/workspace.js";
import type { ConditionInput, StepInput, StoredDefinition } from "./definition.js";
import {
  contractProblems,
  type FoundSource,
  parseSkillRef,
  rankSkills,
  SKILL_LIMITS,
  SKILL_NAME,
  type SourceContract,
} from "./skill-contract.js";
import type { TaskService } from "./tasks.js";

/** The plan as the task ran it (its definition at the successful run's version). */
export interface SkillPlan {
  objective: string;
  steps: StepInput[];
  conditions: ConditionInput[];
  approvals: string[];
  searches: string[];
  csv_types: Record<string, Record<string, string>>;
}

/** Where the skill came from: the run that succeeded, exactly. */
export interface OriginProof {
  task: string;
  definition_version: number;
  run_id: string;
  run_artifact: string;
  finished_at: string | null;
  sources: Record<string, { artifact_id: string; name: string; version: number; sha256: string }>;
  /** Set when that task was itself defined from a skill. */
  from_skill?: { skill: string; version: number } | undefined;
}

/** One skill version as stored. */
export interface Skill {
  plan: SkillPlan;
  sources: Record<string, SourceContract>;
  origin: OriginProof;
  actor: string;
}

export interface SkillUseInput {
  ref: string;
  task_name: string;
  bindings: Record<string, string>;
  parameters?: Record<string, (string | number | boolean | null)[]> | undefined;
  expected_version?: number | undefined;
}

/** The format DuckDB reads a version as, or undefined for text and other non-table content. */
function tableFormat(record: VersionRecord): QueryInputFormat | undefined {
  try {
    return formatOf(record, record.artifact_id);
  } catch {
    return undefined;
  }
}

/** Distills, finds, inspects and applies skills over the task service's workspace and ledger. */
export class SkillService {
  private readonly tasks: Pick<TaskService, "define">;
  private readonly workspace: Workspace;
  private readonly ledger: TaskLedger;
  private readonly sql: WorkspaceSql;
  /** Who distilled a skill, as the ledger records it (the configured identity). */
  private readonly actor: string;

  constructor(options: {
    tasks: Pick<TaskService, "define">;
    workspace: Workspace;
    sql: WorkspaceSql;
    actor: string;
  }) {
    this.tasks = options.tasks;
    this.workspace = options.workspace;
    this.ledger = options.workspace.tasks;
    this.sql = options.sql;
    this.actor = options.actor;
  }

  /** Keeps the plan and source contracts of the task's latest successful published run as the skill's next version. */
  async distill(input: { name: string; task: string; expected_version?: number | undefined }) {
    if (!SKILL_NAME.test(input.name)) {
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `skill name ${JSON.stringify(input.name.slice(0, 80))} must be 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit`,
      );
    }
    const task = await this.ledger.task(input.task);
    if (task === undefined) {
      const known = (await this.ledger.tasks()).map((t) => t.name);
      throw new CairnError(
        ErrorCode.NOT_FOUND,
        `no task "${input.task}" in this workspace: ${known.length === 0 ? "define one with task_define and run it" : `tasks: ${known.slice(0, 20).join(", ")}`}`,
      );
    }
    const run = task.latest_success === null ? undefined : await this.ledger.run(task.latest_success);
    if (run === undefined || run.run_artifact === null) {
      const [newest] = await this.ledger.runs(input.task, 1);
      const why = newest === undefined ? "it has never run" : `its newest run ${newest.run_id} is ${newest.state}`;
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        `task ${input.task} has no successful published run to distill (${why}): task_run {"name": ${JSON.stringify(input.task)}} until it succeeds, then skill_distill again`,
        { data: { task: input.task, latest_success: null } },
      );
    }
    const definition = (await this.ledger.taskVersion(input.task, run.definition_version))?.definition as
      | StoredDefinition
      | undefined;
    if (definition === undefined) {
      throw new CairnError(ErrorCode.INTERNAL, `task ${input.task} lost definition v${run.definition_version}`);
    }
    const aliases = Object.keys(run.snapshot);
    const records = await this.workspace
      .snapshot(Object.values(run.snapshot), { current: false })
      .then((found) => found.refs)
      .catch((error: unknown) => {
        const cause = toCairnError(error);
        if (cause.code !== ErrorCode.NOT_FOUND) throw error;
        throw new CairnError(
          ErrorCode.NOT_FOUND,
          `a source version of run ${run.run_id} was deleted (${cause.message}), so its schema cannot be read: task_run {"name": ${JSON.stringify(input.task)}} on current sources, then skill_distill again`,
          { data: cause.data },
        );
      });
    // A source no SQL step reads may be JSON DuckDB cannot read as a table: its contract is then kind and media type.
    const readBySql = new Set(definition.steps.flatMap((s) => (s.sql === undefined ? [] : (s.inputs ?? []))));
    const sources: Record<string, SourceContract> = {};
    for (const [i, alias] of aliases.entries()) {
      const record = records[i] as VersionRecord;
      const found = await this.examine(record, definition.csv_types[alias]);
      if (found.unreadable !== undefined && readBySql.has(alias)) {
        throw new CairnError(ErrorCode.QUERY_FAILED, `source ${alias} of task ${input.task}: ${found.unreadable}`);
      }
      sources[alias] = {
        kind: record.kind,
        media_type: record.media_type,
        ...(found.format === undefined ? {} : { format: found.format }),
        ...(found.columns === undefined || found.unreadable !== undefined ? {} : { columns: found.columns }),
      };
    }
    const skill: Skill = {
      plan: {
        objective: definition.objective,
        steps: definition.steps,
        conditions: definition.conditions,
        approvals: definition.approvals,
        searches: definition.searches,
        csv_types: definition.csv_types,
      },
      sources,
      origin: {
        task: input.task,
        definition_version: run.definition_version,
        run_id: run.run_id,
        run_artifact: run.run_artifact,
        finished_at: run.finished_at,
        sources: Object.fromEntries(
          aliases.map((alias, i) => {
            const r = records[i] as VersionRecord;
            return [alias, { artifact_id: r.artifact_id, name: r.name, version: r.version, sha256: r.sha256 }];
          }),
        ),
        ...(definition.origin === undefined ? {} : { from_skill: definition.origin }),
      },
      actor: this.actor,
    };
    const description = [definition.objective, ...definition.steps.map((s) => s.name)].join("\n");
    const stored = await this.ledger.putSkill(input.name, skill, description, {
      expectedVersion: input.expected_version,
      actor: this.actor,
    });
    return {
      name: stored.name,
      version: stored.version,
      task: input.task,
      run_id: run.run_id,
      steps: definition.steps.map((s) => s.name),
      sources: Object.fromEntries(Object.entries(sources).map(([alias, c]) => [alias, contractSummary(c)])),
      next_step: `skill_use {"ref": "${stored.name}@${stored.version}", "task_name": "...", "bindings": {${aliases.map((a) => `"${a}": "..."`).join(", ")}}}`,
    };
  }

  /** Skills ranked for `query` (rankSkills), or the newest without one. */
  async find(input: { query?: string | undefined; limit?: number | undefined }) {
    const limit = input.limit ?? SKILL_LIMITS.findDefault;
    if (!Number.isInteger(limit) || limit < 1 || limit > SKILL_LIMITS.find) {
      throw new CairnError(ErrorCode.INVALID_ARGUMENT, `limit must be an integer from 1 to ${SKILL_LIMITS.find}`);
    }
    const all = (await this.ledger.skills()).map((record) => {
      const skill = record.skill as Skill;
      return {
        name: record.name,
        version: record.version,
        objective: skill.plan.objective,
        steps: skill.plan.steps.map((s) => s.name),
        sources: Object.fromEntries(Object.entries(skill.sources).map(([a, c]) => [a, contractSummary(c)])),
        task: skill.origin.task,
        created_at: record.created_at,
      };
    });
    const ranked = rankSkills(all, input.query ?? "");
    return {
      skills: ranked.slice(0, limit).map(({ score, ...s }) => (input.query?.trim() ? { ...s, score } : s)),
      total: ranked.length,
      ...(all.length === 0 ? { next_step: "skill_distill {name, task} keeps a successful task as a skill" } : {}),
    };
  }

  /** One skill version whole: plan, contracts, and its origin proof checked against the workspace now. */
  async inspect(input: { ref: string }) {
    const record = await this.require(input.ref);
    const skill = record.skill as Skill;
    const ids = [skill.origin.run_artifact, ...Object.values(skill.origin.sources).map((s) => s.artifact_id)];
    const missing: string[] = [];
    for (const id of ids) {
      const found = await this.workspace.snapshot([id], { current: false }).catch(() => undefined);
      const recorded = Object.values(skill.origin.sources).find((s) => s.artifact_id === id);
      const record = found?.refs[0];
      if (record === undefined) missing.push(`${id} is gone (deleted)`);
      else if (recorded !== undefined && record.sha256 !== recorded.sha256) missing.push(`${id} no longer matches`);
    }
    return {
      name: record.name,
      version: record.version,
      current_version: record.current_version,
      created_at: record.created_at,
      actor: skill.actor,
      plan: skill.plan,
      sources: skill.sources,
      origin: { ...skill.origin, intact: missing.length === 0, ...(missing.length > 0 ? { problems: missing } : {}) },
      next_step: `skill_use {"ref": "${record.name}@${record.version}", "task_name": "...", "bindings": {${Object.keys(
        skill.sources,
      )
        .map((a) => `"${a}": "..."`)
        .join(", ")}}}`,
    };
  }

  /**
   * Checks each bound source against the skill's contract (every mismatch named in one INVALID_ARGUMENT), applies
   * parameter overrides, and defines `task_name` from the plan, pinned to the exact versions checked.
   */
  /** `actor` is who defines the task it makes (the ledger records it). */
  async use(input: SkillUseInput, actor?: Actor) {
    const record = await this.require(input.ref);
    const skill = record.skill as Skill;
    const ref = `${record.name}@${record.version}`;
    const aliases = Object.keys(skill.sources);
    const bound = Object.keys(input.bindings);
    const problems: string[] = [];
    const unbound = aliases.filter((a) => !(a in input.bindings));
    const extra = bound.filter((a) => !(a in skill.sources));
    if (unbound.length > 0) problems.push(`bindings lack ${unbound.join(", ")}: bind every source alias of ${ref}`);
    if (extra.length > 0) {
      problems.push(
        `bindings name ${extra.join(", ")}, which ${ref} does not have (its sources: ${aliases.join(", ")})`,
      );
    }
    const steps = this.override(skill.plan.steps, input.parameters ?? {}, problems);
    if (problems.length > 0) throw refused(ref, problems);
    const records = (
      await this.workspace.snapshot(
        aliases.map((a) => input.bindings[a] as string),
        { current: false },
      )
    ).refs;
    /** Table aliases -> columns matched (the versions are in the define reply's sources). */
    const checked: Record<string, number> = {};
    for (const [i, alias] of aliases.entries()) {
      const found = records[i] as VersionRecord;
      const contract = skill.sources[alias] as SourceContract;
      const examined =
        contract.format !== undefined && tableFormat(found) !== undefined
          ? await this.examine(found, skill.plan.csv_types[alias])
          : { format: tableFormat(found) };
      const mismatch = contractProblems(`${alias} (${found.name} v${found.version})`, contract, {
        kind: found.kind,
        media_type: found.media_type,
        ...examined,
      });
      if (mismatch.length > 0) {
        problems.push(...mismatch);
      } else if (contract.columns !== undefined) {
        checked[alias] = contract.columns.length;
      }
    }
    if (problems.length > 0) throw refused(ref, problems);
    const defined = await this.tasks.define(
      {
        name: input.task_name,
        objective: skill.plan.objective,
        sources: Object.fromEntries(aliases.map((alias, i) => [alias, (records[i] as VersionRecord).artifact_id])),
        csv_types: skill.plan.csv_types,
        steps,
        conditions: skill.plan.conditions,
        approvals: skill.plan.approvals,
        searches: skill.plan.searches,
        pin_sources: true,
        expected_version: input.expected_version,
      },
      { origin: { skill: record.name, version: record.version }, actor },
    );
    return { ...defined, origin: { skill: record.name, version: record.version }, checked };
  }

  /** The plan's steps with `parameters` replacing existing placeholders' values (same count), problems noted. */
  private override(
    steps: StepInput[],
    parameters: Record<string, (string | number | boolean | null)[]>,
    problems: string[],
  ): StepInput[] {
    for (const [name, values] of Object.entries(parameters)) {
      const step = steps.find((s) => s.name === name);
      const have = step?.parameters?.length ?? 0;
      if (step === undefined) {
        problems.push(`parameters.${name}: no such step (steps: ${steps.map((s) => s.name).join(", ")})`);
      } else if (step.sql === undefined || have === 0) {
        problems.push(
          `parameters.${name}: the step has no SQL placeholders to override (overrides replace values only)`,
        );
      } else if (values.length !== have) {
        problems.push(
          `parameters.${name} has ${values.length} value(s), and the step's SQL has ${have} placeholder value(s): give exactly ${have}`,
        );
      }
    }
    return steps.map((s) => (parameters[s.name] === undefined ? s : { ...s, parameters: parameters[s.name] }));
  }

  /** How DuckDB reads a version: its format and exact ordered columns, with `csvTypes` applied to a CSV. */
  private async examine(record: VersionRecord, csvTypes: Record<string, string> | undefined): Promise<FoundSource> {
    const format = tableFormat(record);
    const base = { kind: record.kind, media_type: record.media_type };
    if (format === undefined) return base;
    const path = await this.workspace.blobPath(record.sha256, record.bytes);
    const label = `${record.name} v${record.version}`;
    const describe = async (types: Record<string, string> | undefined) => {
      const [described] = await this.sql.describeFiles([
        { path, format, label, ...(types === undefined || format !== "csv" ? {} : { columnTypes: types }) },
      ]);
      if (described === undefined || described.next_offset !== null) {
        throw new CairnError(
          ErrorCode.TOO_LARGE,
          `${label} has more than ${SKILL_LIMITS.columns} columns, more than a skill's table contract holds: select the columns the task needs into a narrower table first`,
        );
      }
      return described.columns;
    };
    try {
      return { ...base, format, columns: await describe(csvTypes) };
    } catch (error) {
      const cause = toCairnError(error);
      if (cause.code !== ErrorCode.QUERY_FAILED) throw error;
      // With csv_types, a typed column the file lacks fails the read: then the columns it has say what is missing.
      if (csvTypes !== undefined && format === "csv") {
        const plain = await describe(undefined).catch(() => undefined);
        const names = new Set(plain?.map((c) => c.name));
        if (plain !== undefined && Object.keys(csvTypes).some((c) => !names.has(c))) {
          return { ...base, format, columns: plain };
        }
      }
      return { ...base, format, unreadable: `DuckDB cannot read ${label} as a ${format} table: ${cause.message}` };
    }
  }

  private async require(ref: string): Promise<SkillRecord> {
    const { name, version } = parseSkillRef(ref);
    const record = await this.ledger.skill(name, version);
    if (record !== undefined) return record;
    const current = await this.ledger.skill(name);
    if (current !== undefined) {
      throw new CairnError(
        ErrorCode.NOT_FOUND,
        `skill ${name} has no version ${version}: its versions are 1 to ${current.current_version}`,
      );
    }
    const known = (await this.ledger.skills()).map((s) => s.name);
    throw new CairnError(
      ErrorCode.NOT_FOUND,
      `no skill "${name}" in this workspace: ${known.length === 0 ? "skill_distill {name, task} keeps a successful task as one" : `skills: ${known.slice(0, 20).join(", ")} (skill_find ranks them)`}`,
    );
  }
}

function contractSummary(contract: SourceContract): string {
  return contract.columns === undefined
    ? `${contract.kind} (${contract.media_type})`
    : `${contract.kind}: ${contract.columns.map((c) => `${c.name} ${c.type}`).join(", ")}`;
}

function refused(ref: string, problems: string[]): CairnError {
  return new CairnError(ErrorCode.INVALID_ARGUMENT, `skill ${ref} cannot be applied: ${problems.join("; ")}`, {
    data: { problems },
  });
}
