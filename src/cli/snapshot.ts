// `cairn snapshot export FILE` and `cairn snapshot restore FILE`: the whole workspace (--workspace, $CAIRN_HOME or the
// configuration's) as one verified file. Commands, not operations: they act on a workspace from outside it.
import type { Command } from "commander";
import { ExitError, globalOptions, reportFailure } from "./common.js";

interface Printed {
  file: string;
  bytes: number;
  created_at: string;
  versions: number;
  names: number;
  blobs: number;
  blob_bytes: number;
}

export function registerSnapshot(program: Command): void {
  const snapshot = program
    .command("snapshot")
    .description("carry a whole workspace as one file: export it, restore it elsewhere (verified)");
  snapshot
    .command("export")
    .description("write the workspace (catalog with every table, and every blob it needs) to one snapshot file")
    .argument("<file>", "the snapshot file to write (mode 0600)")
    .option("--force", "replace an existing regular file at FILE")
    .option("--json", "print {file, bytes, created_at, schema_version, versions, names, blobs, blob_bytes, tables}")
    .addHelpText(
      "after",
      "\nThe catalog is copied with SQLite's online backup, so a workspace a running cairn serve uses exports" +
        "\nconsistently. FILE appears whole or not at all. Leases and pending clean-ups stay behind." +
        "\nFormat: a ustar archive (cairn-snapshot.json, catalog.db, blobs/sha256/.., cairn-snapshot.sha256).",
    )
    .action(async (file: string, options: { force?: boolean; json?: boolean }, command: Command) => {
      await run(command, options.json === true, async (workspace) => {
        const { exportSnapshot } = await import("../workspace/snapshot/export-snapshot.js");
        const summary = await exportSnapshot(workspace, file, { force: options.force === true });
        return { output: summary, text: `exported ${workspace} to ${describe(summary)}` };
      });
    });
  snapshot
    .command("restore")
    .description("restore a snapshot file as the workspace (--workspace DIR), after verifying every byte")
    .argument("<file>", "a file written by cairn snapshot export")
    .option("--replace", "replace a workspace directory that is not empty (its current content is deleted)")
    .option(
      "--keep-cache",
      "keep the task step-result cache (only for a snapshot you made: a crafted cache could make task runs reuse wrong results)",
    )
    .option("--json", "print {workspace, file, ..., migrated_to, replaced, cache_entries_dropped}")
    .addHelpText(
      "after",
      "\nEvery member is checked against the manifest's SHA-256 and size, every blob against its name, the catalog" +
        "\nwith PRAGMA integrity_check and migrated forward; it is built beside DIR and renamed into place, so a" +
        "\ndamaged file leaves DIR as it was. Without --replace, DIR must be missing or empty. Stop any cairn serve" +
        "\nusing DIR before --replace.",
    )
    .action(
      async (file: string, options: { replace?: boolean; keepCache?: boolean; json?: boolean }, command: Command) => {
        await run(command, options.json === true, async (workspace) => {
          const { restoreSnapshot } = await import("../workspace/snapshot/restore-snapshot.js");
          const summary = await restoreSnapshot(file, workspace, {
            replace: options.replace === true,
            keepCache: options.keepCache === true,
          });
          const migrated =
            summary.migrated_to > summary.schema_version
              ? ` (catalog migrated from schema ${summary.schema_version} to ${summary.migrated_to})`
              : "";
          return {
            output: summary,
            text: `${summary.replaced ? "replaced" : "restored"} ${workspace} from ${describe(summary)}${migrated}${summary.cache_entries_dropped > 0 ? `; ${summary.cache_entries_dropped} cached task step results dropped (--keep-cache keeps them)` : ""}`,
          };
        });
      },
    );
}

/** Resolves the workspace directory, runs the command, prints its reply or its failure. */
async function run(
  command: Command,
  json: boolean,
  work: (workspace: string) => Promise<{ output: unknown; text: string }>,
): Promise<void> {
  try {
    const options = globalOptions(command);
    const { loadConfig } = await import("../config/load.js");
    const { config, workspaceDir } = loadConfig({ configPath: options.config, workspace: options.workspace });
    const { backendChoice, isShared } = await import("../workspace/backends.js");
    if (isShared(backendChoice(config.workspace))) {
      const { CairnError, ErrorCode } = await import("../errors.js");
      throw new CairnError(
        ErrorCode.INVALID_ARGUMENT,
        "snapshots carry a workspace on SQLite and files; this one's catalog or blobs are on a shared server (PostgreSQL, S3): copy it to a directory first (cairn workspace copy --to DIR), then snapshot that copy with a configuration that keeps the default backends (cairn --workspace DIR snapshot export FILE, run where no cairn.toml names PostgreSQL or S3)",
      );
    }
    const { output, text } = await work(workspaceDir);
    process.stdout.write(json ? `${JSON.stringify(output, null, 2)}\n` : `${text}\n`);
  } catch (error) {
    throw new ExitError(reportFailure(error, json));
  }
}

function describe(summary: Printed): string {
  return (
    `${summary.file} (${summary.bytes} bytes, created ${summary.created_at}): ${summary.versions} versions of ` +
    `${summary.names} names, ${summary.blobs} blobs of ${summary.blob_bytes} bytes`
  );
}
