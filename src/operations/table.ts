// The operation table: every built-in operation, in the order hosts list the tools. Everything a surface offers
// (tools/list, snippet functions, describe_tools, cairn://namespace, CLI commands, the README table) comes from here.
import type { Config } from "../config/schema.js";
import { claim } from "./claims/claim.js";
import { claimOwner } from "./claims/claim-owner.js";
import { claimRelease } from "./claims/claim-release.js";
import { claimRenew } from "./claims/claim-renew.js";
import { describeTools } from "./codemode/describe-tools.js";
import { executeCode } from "./codemode/execute-code.js";
import { readOutput } from "./codemode/read-output.js";
import { searchTools } from "./codemode/search-tools.js";
import { recall } from "./memory/recall.js";
import { remember } from "./memory/remember.js";
import { sessionStatus } from "./memory/session-status.js";
import type { Operation, OperationFactory } from "./operation.js";
import { changes } from "./provenance/changes.js";
import { metrics } from "./provenance/metrics.js";
import { provenance } from "./provenance/provenance.js";
import { context } from "./retrieval/context.js";
import { diff } from "./retrieval/diff.js";
import { retrieve } from "./retrieval/retrieve.js";
import { search } from "./retrieval/search.js";
import { sync } from "./retrieval/sync.js";
import { withRoleCheck } from "./roles.js";
import { describe } from "./sql/describe.js";
import { query } from "./sql/query.js";
import { refresh } from "./sql/refresh.js";
import { approve } from "./tasks/approve.js";
import { skillDistill } from "./tasks/skill-distill.js";
import { skillFind } from "./tasks/skill-find.js";
import { skillInspect } from "./tasks/skill-inspect.js";
import { skillUse } from "./tasks/skill-use.js";
import { taskDefine } from "./tasks/task-define.js";
import { taskRun } from "./tasks/task-run.js";
import { taskSchedule } from "./tasks/task-schedule.js";
import { taskStatus } from "./tasks/task-status.js";
import { verify } from "./tasks/verify.js";
import { deleteVersions } from "./workspace/delete.js";
import { exportFile } from "./workspace/export.js";
import { find } from "./workspace/find.js";
import { importFile } from "./workspace/import.js";
import { inspect } from "./workspace/inspect.js";
import { list } from "./workspace/list.js";
import { prune } from "./workspace/prune.js";
import { read } from "./workspace/read.js";
import { resume } from "./workspace/resume.js";
import { save } from "./workspace/save.js";

const FACTORIES: readonly OperationFactory[] = [
  executeCode,
  readOutput,
  searchTools,
  describeTools,
  save,
  find,
  list,
  inspect,
  resume,
  read,
  query,
  describe,
  refresh,
  search,
  retrieve,
  diff,
  sync,
  context,
  taskDefine,
  taskRun,
  taskStatus,
  approve,
  verify,
  taskSchedule,
  skillDistill,
  skillFind,
  skillInspect,
  skillUse,
  provenance,
  changes,
  metrics,
  recall,
  remember,
  sessionStatus,
  claim,
  claimRenew,
  claimRelease,
  claimOwner,
  importFile,
  deleteVersions,
  exportFile,
  prune,
];

/**
 * Every operation, with the limits of `config` in its texts and schema; each call checks the caller's role first
 * (roles.ts), so no surface can skip it.
 */
export function operations(config: Config): Operation[] {
  return FACTORIES.map((factory) => withRoleCheck(factory(config)));
}
