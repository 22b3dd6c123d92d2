// A task definition: sources by alias, ordered steps (SQL over input1..N, or a snippet), scalar conditions, approval
// gates and evidence searches. The schema every surface checks, and the rules a schema cannot say (references,
// order, a text source for searches), each refused with the fix before anything is stored.
import { z } from "zod";
import { CairnError, ErrorCode } from "../errors.js";
import { isTextMediaType } from "../media-type.js";
import { MAX_SQL_CHARS } from "../query/query-engine.js";
import { isSqlTypeName, isTypedColumnName, MAX_TYPED_COLUMNS } from "../query/query-request.js";
import { assertReadOnlyLeadingKeyword } from "../query/sql-guard.js";
import type { VersionRecord } from "../workspace/catalog/catalog.js";
import { checkKey } from "../workspace/row-changes.js";

export const TASK_LIMITS = {
  sources: 8,
  steps: 8,
  searches: 8,
  conditions: 8,
  /** Inputs of one step (input1..input8). */
  stepInputs: 8,
  parameters: 1000,
  objectiveChars: 2000,
  searchChars: 1000,
  /** Characters of a snippet step's code. */
  codeChars: 64 * 1024,
  /** Rows of each step result a brief previews. */
  previewRows: 5,
  /** Rows a brief shows of what changed in each step against the result it replaces, changed rows first. */
  changeRows: 20,
  /** Bytes of JSON of those rows per step (the brief's budget may cut them further). */
  changeBytes: 8192,
  /** A step result past either bound is still used by its run but not kept for reuse. */
  cachedResultBytes: 64 * 1024 * 1024,
  /** The reuse cache as a whole; least recently used entries go first. */
  cache: { entries: 128, bytes: 256 * 1024 * 1024 },
  /** Citations each evidence search adds to a brief. */
  citationsPerSearch: 3,
  /** The definition as JSON: room for 8 steps at the code and SQL bounds; large values belong in a source. */
  definitionBytes: 1024 * 1024,
  /** Characters of a source ref (a name or ws_ id). */
  refChars: 256,
  /** Problems one refusal lists; the rest are counted. */
  problemsListed: 20,
} as const;

/** Task names: one segment of the artifact names results get (tasks/NAME/steps/STEP, at most 120 characters). */
const TASK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,47}$/;
/** Source aliases, step and condition names. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

// Names and limits are checked by checkDefinition with messages that say the fix; the schema a model reads stays
// short (every pattern and bound in tools/list costs tokens on every request).
export const TaskName = z.string().describe("Task name.");
const Identifier = z.string();
const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

const Step = z.strictObject({
  name: Identifier,
  inputs: z.array(Identifier).optional(),
  sql: z.string().optional(),
  parameters: z.array(Scalar).optional(),
  code: z.string().optional(),
  pure: z.boolean().optional(),
  when: Identifier.optional(),
  key: z.array(z.string()).optional(),
});

const Condition = z.strictObject({
  name: Identifier,
  step: Identifier,
  column: z.string().optional(),
  op: z.enum(["=", "!=", "<", "<=", ">", ">="]),
  value: Scalar,
});

export const DefinitionInput = z.strictObject({
  name: TaskName,
  objective: z.string().describe("What it answers."),
  sources: z.record(Identifier, z.string()).describe("Alias -> name or ws_ id."),
  csv_types: z.record(Identifier, z.record(z.string(), z.string())).optional().describe("Alias -> {column: SQL type}."),
  steps: z
    .array(Step)
    .describe(
      "Ordered; inputs (aliases, earlier steps) are input1..N; sql, or code returning it (pure: reusable); key: row ids.",
    ),
  conditions: z
    .array(Condition)
    .optional()
    .describe("On an earlier step's row_count or one-row column; used by when (!name negates)."),
  approvals: z.array(Identifier).optional().describe("Steps that wait for approve."),
  searches: z.array(z.string()).optional().describe("Cite text sources for these."),
  pin_sources: z.boolean().optional().describe("Keep these versions."),
  expected_version: z.number().int().optional().describe("To replace: the current version."),
});
export type DefinitionInput = z.infer<typeof DefinitionInput>;
export type StepInput = z.infer<typeof Step>;
export type ConditionInput = z.infer<typeof Condition>;

/** A source as stored: what it follows (its name) and, pinned, the exact version. */
export interface StoredSource {
  ref: string;
  name: string;
  /** The version resolved when defined; runs use it only when `pinned`. */
  artifact_id: string;
  version: number;
  kind: string;
  media_type: string;
  pinned: boolean;
}

/** The checked definition the ledger keeps (one per definition version). */
export interface StoredDefinition {
  objective: string;
  sources: Record<string, StoredSource>;
  csv_types: Record<string, Record<string, string>>;
  steps: StepInput[];
  conditions: ConditionInput[];
  approvals: string[];
  searches: string[];
  pin_sources: boolean;
  /** Set when skill_use defined it: the skill and version it came from. */
  origin?: { skill: string; version: number } | undefined;
}

/** Whether a version is document text a search can cite (tables and JSON are data, not passages). */
export function isDocumentText(record: { kind: string; media_type: string }): boolean {
  return !["csv", "parquet", "json"].includes(record.kind) && isTextMediaType(record.media_type);
}

/**
 * The bounds checked before any source is resolved: the definition's size as JSON and its refs' lengths (a huge
 * value would otherwise be stored, or echoed back in a refusal).
 */
export function checkDefinitionSize(input: DefinitionInput): void {
  const problems: string[] = [];
  const bytes = Buffer.byteLength(JSON.stringify(input), "utf8");
  if (bytes > TASK_LIMITS.definitionBytes) {
    problems.push(
      `the definition is ${bytes} bytes of JSON, more than ${TASK_LIMITS.definitionBytes}: save large values (parameter lists, lookup tables) as an artifact and add it as a source`,
    );
  }
  for (const [alias, ref] of Object.entries(input.sources)) {
    if (ref.length > TASK_LIMITS.refChars) {
      problems.push(
        `source ${alias.slice(0, 48)} names a ref of ${ref.length} characters: give an artifact name (at most 120) or a ws_ id`,
      );
    }
  }
  if (problems.length > 0) throw refused(input.name, problems);
}

function refused(name: string, all: string[]): CairnError {
  const problems = all.slice(0, TASK_LIMITS.problemsListed);
  if (all.length > problems.length) problems.push(`and ${all.length - problems.length} more problems`);
  return new CairnError(ErrorCode.INVALID_ARGUMENT, `task ${name.slice(0, 80)} is not valid: ${problems.join("; ")}`, {
    data: { problems },
  });
}

/**
 * The definition checked against itself and its resolved sources (`records`, by alias), as stored. Every problem
 * found is named in one INVALID_ARGUMENT, each with its fix.
 */
export function checkDefinition(input: DefinitionInput, records: Record<string, VersionRecord>): StoredDefinition {
  const problems: string[] = [];
  const aliases = Object.keys(input.sources);
  if (!TASK_NAME.test(input.name)) {
    problems.push(
      `name ${JSON.stringify(input.name.slice(0, 80))} must be 1-48 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit`,
    );
  }
  const identifiers = [
    ...aliases.map((a) => ["source alias", a] as const),
    ...input.steps.map((s) => ["step name", s.name] as const),
    ...(input.conditions ?? []).map((c) => ["condition name", c.name] as const),
  ];
  for (const [what, id] of identifiers) {
    if (!IDENTIFIER.test(id)) {
      problems.push(
        `${what} ${JSON.stringify(id.slice(0, 80))} must be a letter or _ then letters, digits or _ (at most 48), e.g. "sales_2024"`,
      );
    }
  }
  const counted: [string, number, number][] = [
    ["steps", input.steps.length, TASK_LIMITS.steps],
    ["searches", input.searches?.length ?? 0, TASK_LIMITS.searches],
    ["conditions", input.conditions?.length ?? 0, TASK_LIMITS.conditions],
    ["approvals", input.approvals?.length ?? 0, TASK_LIMITS.steps],
  ];
  for (const [field, count, most] of counted) {
    if (count > most) problems.push(`${field} has ${count} entries, more than ${most}: split the task`);
  }
  if (input.steps.length === 0) problems.push("steps is empty: give at least one {name, inputs, sql} or {name, code}");
  if (input.objective.trim() === "" || input.objective.length > TASK_LIMITS.objectiveChars) {
    problems.push(`objective must say what the task answers in 1-${TASK_LIMITS.objectiveChars} characters`);
  }
  for (const search of input.searches ?? []) {
    if (search.trim() === "" || search.length > TASK_LIMITS.searchChars) {
      problems.push(`each search must be 1-${TASK_LIMITS.searchChars} characters`);
    }
  }
  for (const step of input.steps) {
    if ((step.inputs?.length ?? 0) > TASK_LIMITS.stepInputs) {
      problems.push(`step ${step.name} has more than ${TASK_LIMITS.stepInputs} inputs`);
    }
    if ((step.sql?.length ?? 0) > MAX_SQL_CHARS)
      problems.push(`step ${step.name}: sql is longer than ${MAX_SQL_CHARS} characters`);
    if ((step.code?.length ?? 0) > TASK_LIMITS.codeChars)
      problems.push(`step ${step.name}: code is longer than ${TASK_LIMITS.codeChars} characters`);
    if ((step.parameters?.length ?? 0) > TASK_LIMITS.parameters)
      problems.push(`step ${step.name}: more than ${TASK_LIMITS.parameters} parameters`);
    try {
      checkKey(step.key);
    } catch (error) {
      problems.push(`step ${step.name}: ${(error as Error).message}`);
    }
  }
  if (aliases.length === 0) problems.push('sources is empty: name at least one artifact, e.g. {"sales": "data/sales"}');
  if (aliases.length > TASK_LIMITS.sources) {
    problems.push(`sources has ${aliases.length} aliases, more than ${TASK_LIMITS.sources}: split the task`);
  }
  const known = new Set(aliases);
  const stepIndex = new Map<string, number>();
  for (const [i, step] of input.steps.entries()) {
    const where = `step ${step.name}`;
    if (known.has(step.name) || stepIndex.has(step.name)) {
      problems.push(`${where}: the name is already used by a source or an earlier step; names must be unique`);
    }
    const isSql = step.sql !== undefined;
    if (isSql === (step.code !== undefined)) {
      problems.push(`${where}: give exactly one of sql (a SELECT over input1..N) or code (a snippet)`);
    }
    if (!isSql && step.parameters !== undefined) problems.push(`${where}: parameters apply to sql steps only`);
    if (isSql && step.pure !== undefined)
      problems.push(`${where}: pure applies to code steps only (SQL reuse is decided from the SQL)`);
    const inputs = step.inputs ?? [];
    if (isSql && inputs.length === 0)
      problems.push(`${where}: a sql step needs inputs (source aliases or earlier steps)`);
    for (const name of inputs) {
      if (!known.has(name) && !stepIndex.has(name)) {
        const later = input.steps.slice(i + 1).some((s) => s.name === name);
        problems.push(
          later
            ? `${where}: input ${name} is a later step; order the steps so each reads only earlier ones`
            : `${where}: input ${name} is neither a source alias (${aliases.join(", ")}) nor an earlier step`,
        );
      }
    }
    if (isSql && step.sql !== undefined) {
      try {
        assertReadOnlyLeadingKeyword(step.sql);
      } catch (error) {
        problems.push(`${where}: ${(error as Error).message}`);
      }
    }
    stepIndex.set(step.name, i);
  }
  const conditions = new Map<string, ConditionInput>();
  for (const condition of input.conditions ?? []) {
    if (conditions.has(condition.name)) problems.push(`condition ${condition.name} is defined twice`);
    if (!stepIndex.has(condition.step)) {
      problems.push(`condition ${condition.name}: step ${condition.step} is not a step of this task`);
    }
    conditions.set(condition.name, condition);
  }
  for (const [i, step] of input.steps.entries()) {
    if (step.when === undefined) continue;
    const name = step.when.startsWith("!") ? step.when.slice(1) : step.when;
    const condition = conditions.get(name);
    if (condition === undefined) {
      problems.push(
        `step ${step.name}: when ${step.when} names no condition (conditions: [{name, step, op, value}]; !name negates one)`,
      );
    } else if ((stepIndex.get(condition.step) ?? i) >= i) {
      problems.push(`step ${step.name}: when ${step.when} reads step ${condition.step}, which does not run before it`);
    }
  }
  const gates = input.approvals ?? [];
  if (new Set(gates).size !== gates.length) problems.push("approvals names a step twice");
  for (const gate of gates.slice(0, TASK_LIMITS.steps + 1)) {
    if (!stepIndex.has(gate)) problems.push(`approvals: ${gate.slice(0, 80)} is not a step of this task`);
  }
  for (const [alias, types] of Object.entries(input.csv_types ?? {})) {
    const record = records[alias];
    if (!known.has(alias)) problems.push(`csv_types: ${alias} is not a source alias`);
    else if (record !== undefined && record.kind !== "csv" && !/csv/.test(record.media_type)) {
      problems.push(`csv_types: source ${alias} is ${record.kind}, not CSV (Parquet and JSON carry their own types)`);
    }
    const columns = Object.entries(types);
    if (columns.length === 0) problems.push(`csv_types.${alias} is empty`);
    if (columns.length > MAX_TYPED_COLUMNS) {
      problems.push(`csv_types.${alias} names ${columns.length} columns, more than ${MAX_TYPED_COLUMNS}`);
    }
    const bad = columns.filter(([column, type]) => !isTypedColumnName(column) || !isSqlTypeName(type));
    for (const [column, type] of bad.slice(0, 3)) {
      problems.push(
        `csv_types.${alias}: ${JSON.stringify(column.slice(0, 80))}: ${JSON.stringify(String(type).slice(0, 80))} must map a column name (1-256 characters) to a SQL type such as DECIMAL(18,2), BIGINT, DATE or VARCHAR`,
      );
    }
    if (bad.length > 3) problems.push(`csv_types.${alias}: ${bad.length - 3} more such columns`);
  }
  const searches = input.searches ?? [];
  if (searches.length > 0 && !Object.values(records).some(isDocumentText)) {
    problems.push(
      "searches cite passages of document-text sources, and every source here is a table: add a text source (a note, document or code artifact, e.g. a policy imported as .txt or .md) to sources, or drop searches",
    );
  }
  if (problems.length > 0) throw refused(input.name, problems);
  const pinned = input.pin_sources === true;
  return {
    objective: input.objective,
    sources: Object.fromEntries(
      aliases.map((alias) => {
        const record = records[alias] as VersionRecord;
        const source: StoredSource = {
          ref: input.sources[alias] as string,
          name: record.name,
          artifact_id: record.artifact_id,
          version: record.version,
          kind: record.kind,
          media_type: record.media_type,
          pinned,
        };
        return [alias, source];
      }),
    ),
    csv_types: input.csv_types ?? {},
    steps: input.steps,
    conditions: input.conditions ?? [],
    approvals: input.approvals ?? [],
    searches,
    pin_sources: pinned,
  };
}
