// Composition root: config -> executor -> bindings -> tools -> sessions. The ONE place that picks backends; every
// command of the CLI builds the app here and talks to it, never to the parts directly.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createCliRunner } from "./cli-programs/cli-runner.js";
import { Bindings } from "./codemode/bindings.js";
import { type CodeRunner, createCodeRunner } from "./codemode/execute-code.js";
import { defineCliBindings, defineGatewayBindings } from "./codemode/gateway-bindings.js";
import { defineOperationBindings } from "./codemode/operation-bindings.js";
import { SavedSnippets } from "./codemode/saved.js";
import { defineSavedBindings } from "./codemode/saved-bindings.js";
import { stepSnippets } from "./codemode/step-snippets.js";
import { defineStoreBindings, storeCapabilities } from "./codemode/store-bindings.js";
import { type Actor, configuredActor } from "./config/identity.js";
import { importRoots, type LoadedConfig } from "./config/load.js";
import type { Config } from "./config/schema.js";
import { lazy } from "./lazy.js";
import { createLogger, type Logger } from "./log.js";
import { capturingWrites, SessionCapture } from "./memory/capture.js";
import { loadEmbedder } from "./memory/embedder.js";
import { RecallCounter } from "./memory/recall-coverage.js";
import { setRecallCoverage } from "./metrics/metrics.js";
import { UsageRecorder } from "./metrics/usage-recorder.js";
import { operationCapabilities, programCapabilities } from "./operations/capabilities.js";
import type { Operation, OperationServices } from "./operations/operation.js";
import { operations as operationTable } from "./operations/table.js";
import type { QueryEngine } from "./query/query-engine.js";
import { type CapabilityRegistry, createCapabilityRegistry } from "./registry/capability-registry.js";
import { createArgsValidator } from "./registry/validate-args.js";
import type { Executor } from "./sandbox/executor.js";
import { NodeExecutor } from "./sandbox/node-executor.js";
import { QuickJsExecutor } from "./sandbox/quickjs-executor.js";
import type { ServerDeps } from "./server/create-server.js";
import { HeldRuns } from "./server/held-runs.js";
import { namespaceContent } from "./server/namespace-resource.js";
import { operationTools, trimListedFields } from "./server/operation-tools.js";
import { notEnabledError, type Profile, selectToolNames } from "./server/profiles.js";
import type { ToolDefinition } from "./server/tool.js";
import { followDirectTools } from "./server/tools/direct-tools.js";
import type { Session } from "./session/session.js";
import { SessionPool } from "./session/session-pool.js";
import type { SessionSummary } from "./session/session-summary.js";
import { workspaceHandles } from "./session/shared-stores.js";
import { loadTokenCounter } from "./tokens/encoding.js";
import { approvalReplays } from "./upstream/approval-replays.js";
import { openApprovalGate } from "./upstream/approvals.js";
import { createGateway } from "./upstream/gateway.js";
import { oauthDir } from "./upstream/oauth-store.js";
import { followUpstreams } from "./upstream/upstream-capabilities.js";
import { createUpstreamManager, type UpstreamStatus } from "./upstream/upstream-manager.js";
import { VERSION } from "./version.js";
import { isPostgres } from "./workspace/backend-names.js";
import type { WorkspaceSql } from "./workspace/sql.js";
import type { Workspace } from "./workspace/workspace.js";

export interface App {
  readonly config: Config;
  readonly configPath: string | null;
  readonly workspaceDir: string;
  readonly logger: Logger;
  readonly executor: Executor;
  readonly runner: CodeRunner;
  /** The shared workspace, opened (and its native SQLite module loaded) on first use. */
  workspace(): Promise<Workspace>;
  /** SQL over the workspace (DuckDB loaded on the first query). */
  sql(): Promise<WorkspaceSql>;
  /** Every capability snippets can call (upstream tools, workspace.*, hidden cairn:*). */
  readonly registry: CapabilityRegistry;
  /**
   * Connects the upstream servers (in parallel, each within its startup_timeout_ms) and resolves when each is ready
   * or has failed; never throws. Idempotent.
   */
  start(): Promise<void>;
  /** State of each configured upstream server. */
  upstreams(): UpstreamStatus[];
  /** Every built-in operation: what tools, snippet functions and commands are made of. */
  readonly operations: readonly Operation[];
  /** Calls an operation as the command line does (a private session, the operation's own argument checks). */
  services: OperationServices;
  /** Every tool this build offers, by name. */
  allTools(): ToolDefinition[];
  /**
   * The tools a host sees: the profile's (else `profile` of cairn.toml), changed by `tools` (`+name` / `-name`) or
   * replaced by a bare list; throws INVALID_ARGUMENT for unknown names.
   */
  selectTools(selection?: { profile?: Profile | undefined; tools?: readonly string[] | undefined }): ToolDefinition[];
  serverDeps(tools: readonly ToolDefinition[]): ServerDeps;
  /** Who this process acts as: [identity] of cairn.toml (default: the local account, a writer). */
  readonly actor: Actor;
  /** A private session acting as `actor` (an HTTP token's identity), else as the configured identity. */
  newSession(id: string, actor?: Actor): Session;
  /**
   * The Session of an identity (`actor`, default the configured one): its result store, artifact store and spills,
   * shared by every request and connection of that identity for the life of the process (decision 0261).
   */
  identitySession(actor?: Actor): Session;
  /** What each identity that served MCP holds and does now (metadata only), for `serve --ui`'s sessions pages. */
  liveSessions(): Promise<SessionSummary[]>;
  close(): Promise<void>;
}

export interface CreateAppOptions {
  logger?: Logger;
  /**
   * Load the sandbox's WebAssembly in a worker at once (a server's first snippet does not wait for it), or on the first
   * snippet (a one-shot command, which may run none). @default true
   */
  prewarmSandbox?: boolean;
}

export function createApp(loaded: LoadedConfig, options: CreateAppOptions = {}): App {
  const { config } = loaded;
  const logger = options.logger ?? createLogger();
  const actor: Actor = configuredActor(config.identity);
  const executor: Executor =
    config.sandbox.backend === "node" && config.sandbox.allow_unsafe
      ? new NodeExecutor({ maxWorkers: config.sandbox.max_workers, maxQueued: config.sandbox.max_queued })
      : new QuickJsExecutor({
          maxWorkers: config.sandbox.max_workers,
          maxQueued: config.sandbox.max_queued,
          prewarm: options.prewarmSandbox ?? true,
        });
  // The native engines load on first use (SQLite with the workspace, DuckDB with the first query).
  const workspace = lazy(() =>
    Promise.all([import("./workspace/workspace.js"), import("./workspace/backends.js")]).then(
      ([{ openWorkspace }, { backendChoice }]) =>
        openWorkspace(loaded.workspaceDir, {
          backends: backendChoice(config.workspace),
          indexBytes: config.workspace.index_bytes,
          logger: logger.child("workspace"),
        }),
    ),
  );
  const queryEngine = lazy<QueryEngine>(() =>
    import("./query/child-process-query-engine.js").then(({ createChildProcessQueryEngine }) =>
      createChildProcessQueryEngine({
        memory: config.workspace.query_memory,
        threads: config.workspace.query_threads,
        logger: logger.child("query"),
      }),
    ),
  );
  const sql = lazy(() =>
    Promise.all([workspace(), import("./workspace/sql.js")]).then(
      ([ws, { WorkspaceSql }]) =>
        new WorkspaceSql(ws, queryEngine, config.workspace, join(loaded.workspaceDir, "scratch")),
    ),
  );
  const tasks = lazy(() =>
    Promise.all([workspace(), sql(), import("./tasks/tasks.js")]).then(
      ([ws, workspaceSql, { TaskService }]) =>
        new TaskService({
          workspace: ws,
          sql: workspaceSql,
          actor: actor.name,
          // Each code step runs in a fresh sandbox with a session of its own, closed after it, as the run's caller.
          runSnippet: stepSnippets(() => runner, config, actor),
        }),
    ),
  );
  // Capture is on in the runtime profile unless [memory] capture says otherwise (decision 0210).
  const capture = new SessionCapture(
    config.memory.capture ?? config.profile === "runtime",
    async () => (await workspace()).memory,
    logger.child("memory"),
  );
  const embedder = lazy(async () =>
    config.memory.model_dir === undefined ? undefined : loadEmbedder(config.memory.model_dir),
  );
  const table = capturingWrites(operationTable(config), capture);
  const registry = createCapabilityRegistry([
    ...operationCapabilities(table),
    ...programCapabilities(config.cli),
    ...storeCapabilities(),
  ]);
  const manager = createUpstreamManager(config.servers, { logger: logger.child("upstream") });
  const validator = createArgsValidator({ logger: logger.child("registry") });
  // Approvals (decision 0240): handles live in the workspace directory, events in the workspace's log.
  const approvals = openApprovalGate({
    config,
    workspaceDir: loaded.workspaceDir,
    manager,
    events: async () => (await workspace()).events,
  });
  const gateway = createGateway({ manager, registry, validator, approvals });
  const cli = createCliRunner(config.cli, {
    logger: logger.child("cli"),
    hidden: [loaded.workspaceDir, oauthDir()],
  });
  // Each server's tools join the registry as soon as it is ready: one slow server holds back no other.
  const stopFollowing = followUpstreams(manager, registry);
  let started: Promise<void> | undefined;
  const start = () => {
    started ??= manager.start();
    return started;
  };
  /** Starts the servers if nothing did yet, and waits for `servers` (default: all) still starting. Never throws. */
  const ready = (servers?: readonly string[]) => {
    void start();
    return manager.settled(servers);
  };
  const upstreamCapabilities = () =>
    registry.list().filter((c) => c.server !== undefined && c.server in config.servers);

  const recalls = new RecallCounter();
  setRecallCoverage(async () => recalls.coverage());
  // Usage aggregates wait in memory and reach the workspace in batches (every 256 calls, each minute, at close).
  const usage = new UsageRecorder({
    store: async () => (await workspace.current())?.events,
    counter: () => loadTokenCounter(config.output.tokenizer),
  });
  const usageFlush = setInterval(() => usage.flush().catch(() => {}), 60_000);
  usageFlush.unref();
  const services: OperationServices = {
    config,
    usage,
    workspace,
    sql,
    tasks,
    memory: { capture, embedder, recalls },
    get runner() {
      return runner;
    },
    registry,
    ready,
    upstreamStatus: () => manager.list().map(({ server, status, cause }) => ({ server, status, cause })),
    // Imports from tools and snippets never read Cairn's own state, whatever the roots (decision 0280): cairn.toml
    // included, whose headers and env may hold literal secrets.
    importRoots: {
      roots: importRoots(config, loaded.configPath),
      hidden: [loaded.workspaceDir, oauthDir(), ...(loaded.configPath === null ? [] : [loaded.configPath])],
    },
    approvals: approvalReplays({ approvals, gateway, ready }),
  };
  const bindings = new Bindings({ suggest: (name) => registry.suggest(name) });
  defineStoreBindings(bindings);
  defineOperationBindings(bindings, table, services);
  const upstreamRuns = defineGatewayBindings(bindings, {
    gateway,
    servers: () => Object.keys(config.servers),
    capabilities: upstreamCapabilities,
    settled: (servers) => ready(servers),
  });
  defineCliBindings(bindings, cli, config.cli.mode === "allowlist", (name) => registry.suggest(name));
  // Saved snippets run by name in the caller's run (decision 0242).
  const saved = new SavedSnippets(workspace);
  defineSavedBindings(bindings, saved);
  const runner = createCodeRunner(
    executor,
    bindings,
    config.sandbox,
    (code) => upstreamRuns.prepare(code),
    capture,
    config.approvals.timeout_ms,
    saved,
  );
  const exposed = operationTools(table, services);
  // The profile of the last selectTools: what a call of a tool it leaves out is told.
  let servedProfile: Profile = config.profile;
  const tools = exposed.map((e) => e.tool);
  const direct = followDirectTools(upstreamCapabilities, { manager, validator, output: config.output, approvals });
  // On a PostgreSQL catalog every server of the workspace answers for every handle (decision 0293).
  const sessions = new SessionPool(
    config,
    actor,
    isPostgres(config.workspace.catalog) ? workspaceHandles(workspace) : undefined,
  );
  // This process's id: in every HTTP response (Cairn-Instance) and in every approval state it seals (decision 0294).
  const instance = randomBytes(6).toString("base64url");
  const heldRuns = new HeldRuns({
    timeoutMs: config.approvals.timeout_ms,
    maxHeldPerIdentity: config.approvals.max_held,
    instance,
  });
  const namespace = () =>
    namespaceContent({
      config,
      version: VERSION,
      executorKind: executor.kind,
      operations: table,
      upstreams: () => manager.list(),
      programs: () => (config.cli.mode === "allowlist" ? cli.programs().map((p) => p.name) : []),
    });

  return {
    config,
    configPath: loaded.configPath,
    workspaceDir: loaded.workspaceDir,
    logger,
    executor,
    runner,
    workspace,
    sql,
    registry,
    operations: table,
    services,
    start,
    upstreams: () => manager.list(),
    allTools: () => tools,
    selectTools(selection = {}) {
      const byName = new Map(tools.map((t) => [t.name, t]));
      const available = exposed.map(({ tool, profiles }) => ({ name: tool.name, profiles }));
      const profile = selection.profile ?? config.profile;
      servedProfile = profile;
      capture.enabled = config.memory.capture ?? profile === "runtime";
      const names = selectToolNames(available, profile, selection.tools);
      usage.measureTokens = names.includes("metrics");
      return trimListedFields(
        names.map((name) => byName.get(name) as ToolDefinition),
        table,
      );
    },
    serverDeps: (selected) => ({
      version: VERSION,
      tools: selected,
      ...(config.gateway.direct
        ? {
            dynamicTools: () => direct.tools(),
            onToolsChanged: (listener: () => void) => direct.onChange(listener),
          }
        : {}),
      namespace,
      resultsEnabled: config.results.enabled,
      artifactsEnabled: config.artifacts.enabled,
      workspace,
      logger,
      heldRuns,
      // The approval app's buttons call approve through the host; a profile without it lists it to apps alone.
      appOnlyTools: selected.some((t) => t.name === "approve") ? [] : tools.filter((t) => t.name === "approve"),
      notEnabled: (name: string) => {
        if (selected.some((t) => t.name === name)) return undefined;
        const off = exposed.find((e) => e.tool.name === name);
        if (off === undefined) return undefined;
        const snippet = table.find((o) => o.name === name)?.snippet?.path;
        return {
          role: off.tool.role,
          error: notEnabledError({ name, profiles: off.profiles, snippet }, servedProfile),
        };
      },
    }),
    actor,
    newSession: (id, as) => sessions.newSession(id, as),
    identitySession: (as) => sessions.identitySession(as),
    liveSessions: () => sessions.liveSessions(),
    async close() {
      heldRuns.close();
      await sessions.close();
      await capture.flush();
      stopFollowing();
      await Promise.allSettled([executor.close(), manager.close(), cli.close()]);
      clearInterval(usageFlush);
      await usage
        .flush()
        .catch((error: Error) => logger.warn("usage metrics were not saved", { error: error.message }));
      await (await queryEngine.current())?.close();
      await (await workspace.current())?.close();
    },
  };
}
