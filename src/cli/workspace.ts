// `cairn workspace copy --to TARGET`: the workspace the global options name (as `cairn snapshot export` finds it)
// copied to other backends, verified. A command, not an operation: it acts on whole workspaces from outside them.
import type { Command } from "commander";
import type { LoadConfigOptions, LoadedConfig } from "../config/load.js";
import type { BackendChoice } from "../workspace/backends.js";
import type { BlobStore } from "../workspace/blobs/blob-store.js";
import type { CopySummary } from "../workspace/copy.js";
import { ExitError, globalOptions, reportFailure } from "./common.js";

export function registerWorkspace(program: Command): void {
  const workspace = program
    .command("workspace")
    .description("act on a whole workspace: copy it to other backends (SQLite and files, PostgreSQL and S3), verified");
  workspace
    .command("copy")
    .description("copy the workspace to an empty destination with every id, digest, version number and event kept")
    .requiredOption(
      "--to <target>",
      "a directory (SQLite catalog and blob files there), or a cairn .toml whose [workspace] names the destination's catalog, blobs, endpoint, region and path_style",
    )
    .option("--json", "print {source, destination, versions, names, blobs, blob_bytes, blobs_copied, tables, verified}")
    .addHelpText(
      "after",
      "\nThe source is the workspace --workspace, --config, $CAIRN_HOME or ./cairn.toml names; it is only read, from one" +
        "\nsnapshot. The destination catalog must be empty. Blobs are copied first (hash-verified, ones already there" +
        "\nkept), then every row in one transaction, checked before it commits: a failure leaves the destination empty." +
        "\nSearch indexes are rebuilt there and the context index is rebuilt by its indexer; leases stay behind." +
        "\nA .toml target is read as Cairn reads a config ($CAIRN_HOME aside): its [workspace] path holds the SQLite" +
        "\ncatalog, the blob files or the S3 cache; passwords come from its ${VAR}s or PGPASSWORD / AWS_* as usual.",
    )
    .action(async (options: { to: string; json?: boolean }, command: Command) => {
      const json = options.json === true;
      try {
        const summary = await copyCommand(command, options.to);
        process.stdout.write(json ? `${JSON.stringify(summary, null, 2)}\n` : `${describe(summary)}\n`);
      } catch (error) {
        throw new ExitError(reportFailure(error, json));
      }
    });
}

/** One side as the command resolved it. */
interface End {
  dir: string;
  choice: BackendChoice;
}

async function copyCommand(command: Command, to: string): Promise<CopySummary> {
  const globals = globalOptions(command);
  const [{ loadConfig }, backends, { copyWorkspace }] = await Promise.all([
    import("../config/load.js"),
    import("../workspace/backends.js"),
    import("../workspace/copy.js"),
  ]);
  const loaded = loadConfig({ configPath: globals.config, workspace: globals.workspace });
  const source: End = { dir: loaded.workspaceDir, choice: backends.backendChoice(loaded.config.workspace) };
  if (!backends.isPostgres(source.choice.catalog)) await requireWorkspace(source.dir);
  const destination = await targetOf(to, loadConfig, backends.backendChoice);
  const created = await prepareDestination(destination, backends);
  const [{ mkdtemp, rm }, { tmpdir }, { join }] = await Promise.all([
    import("node:fs/promises"),
    import("node:os"),
    import("node:path"),
  ]);
  /** What to close (catalogs, and blob stores that hold connections) and remove at the end. */
  const opened: { close(): unknown }[] = [];
  const scratch: string[] = [];
  let ok = false;
  try {
    const openBlobs = async (dir: string, choice: BackendChoice) => {
      const blobs = await backends.openBlobStore(dir, choice);
      opened.push(blobs);
      return blobs;
    };
    const open = async (end: End) => {
      const catalog = await backends.openCatalog(end.dir, end.choice);
      opened.push(catalog);
      return { catalog, blobs: await openBlobs(end.dir, end.choice), label: await labelOf(end, backends) };
    };
    const to = await open(destination);
    let verifyBlobs: BlobStore | undefined;
    if (backends.isS3(destination.choice.blobs)) {
      // Read back through a store with no cache to speak of, so the bucket's own bytes are hashed.
      const cold = await mkdtemp(join(tmpdir(), "cairn-copy-check-"));
      scratch.push(cold);
      verifyBlobs = await openBlobs(cold, { ...destination.choice, blob_cache_bytes: 1 });
    }
    const summary = await copyWorkspace(await open(source), { ...to, verifyBlobs });
    ok = true;
    return summary;
  } finally {
    for (const store of opened.reverse()) await Promise.resolve(store.close()).catch(() => {});
    for (const path of scratch) await rm(path, { recursive: true, force: true });
    // A directory this command made is taken away again: the destination is as it was.
    if (!ok && created !== undefined) await rm(created, { recursive: true, force: true });
  }
}

/** `--to`: a .toml config file's `[workspace]` (its path, not $CAIRN_HOME's), else a directory for SQLite and files. */
async function targetOf(
  to: string,
  loadConfig: (options: LoadConfigOptions) => LoadedConfig,
  backendChoice: (workspace: LoadedConfig["config"]["workspace"]) => BackendChoice,
): Promise<End> {
  const { resolve } = await import("node:path");
  if (!to.endsWith(".toml")) return { dir: resolve(to), choice: {} };
  const { stat } = await import("node:fs/promises");
  if (!(await stat(to).catch(() => undefined))?.isFile()) {
    const { CairnError, ErrorCode } = await import("../errors.js");
    throw new CairnError(
      ErrorCode.NOT_FOUND,
      `--to ${to}: no such file: write the destination's cairn.toml ([workspace] catalog, blobs, path...) first, or pass a directory`,
    );
  }
  // $CAIRN_HOME names the source here; the target's directory is the one its own file gives.
  const { CAIRN_HOME: _, ...env } = process.env;
  const loaded = loadConfig({ configPath: to, env });
  return { dir: loaded.workspaceDir, choice: backendChoice(loaded.config.workspace) };
}

async function requireWorkspace(dir: string): Promise<void> {
  const [{ stat }, { join }, { CairnError, ErrorCode }] = await Promise.all([
    import("node:fs/promises"),
    import("node:path"),
    import("../errors.js"),
  ]);
  if ((await stat(join(dir, "catalog.db")).catch(() => undefined))?.isFile()) return;
  throw new CairnError(
    ErrorCode.NOT_FOUND,
    `no workspace at ${dir} (no catalog.db): pass --workspace DIR, --config FILE or set CAIRN_HOME to the workspace to copy`,
    { data: { workspace: dir } },
  );
}

/**
 * Makes the destination's directory when it is missing (returned, so a failed copy removes it). A directory that
 * holds files but no workspace is refused where SQLite or the blob files would go into it.
 */
async function prepareDestination(
  end: End,
  backends: typeof import("../workspace/backends.js"),
): Promise<string | undefined> {
  const [{ lstat, mkdir, readdir }, { CairnError, ErrorCode }] = await Promise.all([
    import("node:fs/promises"),
    import("../errors.js"),
  ]);
  const found = await lstat(end.dir).catch(() => undefined);
  if (found === undefined) {
    await mkdir(end.dir, { recursive: true, mode: 0o700 });
    return end.dir;
  }
  if (!found.isDirectory()) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `${end.dir} is not a directory: copy to a new or empty directory`);
  }
  const local = !backends.isPostgres(end.choice.catalog) || !backends.isS3(end.choice.blobs);
  const entries = await readdir(end.dir);
  if (local && entries.length > 0 && !entries.includes("catalog.db") && !entries.includes("blobs")) {
    throw new CairnError(
      ErrorCode.ALREADY_EXISTS,
      `${end.dir} holds files and no Cairn workspace: copy to a new or empty directory`,
      { data: { path: end.dir } },
    );
  }
  return undefined;
}

async function labelOf(
  end: End,
  backends: typeof import("../workspace/backends.js"),
): Promise<{ catalog: string; blobs: string }> {
  const [{ join }, { redactUrl }] = await Promise.all([
    import("node:path"),
    import("../workspace/catalog/pg-connection.js"),
  ]);
  const { catalog, blobs, endpoint } = end.choice;
  return {
    catalog: backends.isPostgres(catalog) ? redactUrl(catalog) : join(end.dir, "catalog.db"),
    blobs: backends.isS3(blobs)
      ? `${blobs}${endpoint === undefined ? "" : ` at ${redactUrl(endpoint)}`}`
      : join(end.dir, "blobs"),
  };
}

function describe(summary: CopySummary): string {
  return (
    `copied ${summary.versions} versions of ${summary.names} names and ${summary.blobs} blobs of ` +
    `${summary.blob_bytes} bytes (${summary.blobs_copied} written) from ${summary.source.catalog} to ` +
    `${summary.destination.catalog} (blobs in ${summary.destination.blobs}); verified`
  );
}
