// `cairn doctor`'s check of the workspace's backends, run in the doctor's own process with the configuration the
// host's entry loads, its environment included: the catalog opens (migrated) and answers a count; the blob store takes
// a small random probe blob, returns it hash-verified and removes it. URLs are printed with their passwords redacted.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { loadConfig } from "../config/load.js";
import { toCairnError } from "../errors.js";
import { redactUrl } from "../workspace/catalog/pg-connection.js";
import type { DoctorStep } from "./doctor-probe.js";

/** Checks the catalog and the blob store the configuration names. Never throws. */
export async function backendSteps(
  configPath: string | undefined,
  workspace: string | undefined,
  env: Record<string, string> | undefined,
): Promise<DoctorStep[]> {
  let loaded: ReturnType<typeof loadConfig>;
  try {
    // As the entry's process would: its environment (CAIRN_HOME, CAIRN_CONFIG) over this one.
    loaded = loadConfig({ configPath, workspace, env: { ...process.env, ...env } });
  } catch (error) {
    const detail = toCairnError(error).message;
    return [{ step: "backends", status: "skipped", detail: `not checked: the configuration did not load (${detail})` }];
  }
  const { backendChoice, isPostgres, isS3, openBlobStore, openCatalog } = await import("../workspace/backends.js");
  const choice = backendChoice(loaded.config.workspace);
  const dir = loaded.workspaceDir;
  const catalogName = isPostgres(choice.catalog) ? redactUrl(choice.catalog) : join(dir, "catalog.db");
  const blobsName = isS3(choice.blobs)
    ? `${choice.blobs}${choice.endpoint === undefined ? "" : ` at ${redactUrl(choice.endpoint)}`}`
    : join(dir, "blobs");
  // The drivers read their secrets from this process's environment (PGPASSWORD, AWS_ACCESS_KEY_ID, …): the entry's
  // own variables are laid over it while they run, or a server that works would be reported failing.
  const restore = overlay(env);
  try {
    return await check();
  } finally {
    restore();
  }

  async function check(): Promise<DoctorStep[]> {
    const steps: DoctorStep[] = [];
    try {
      const catalog = await openCatalog(dir, choice);
      try {
        const page = await catalog.list({ limit: 1, overview: { namespaces: 1 } });
        steps.push({
          step: "catalog",
          status: "ok",
          detail: `${isPostgres(choice.catalog) ? "PostgreSQL" : "SQLite"} at ${catalogName}: ${page.overview?.total ?? 0} names`,
        });
      } finally {
        await catalog.close();
      }
    } catch (error) {
      steps.push({
        step: "catalog",
        status: "FAIL",
        detail: `${catalogName}: ${toCairnError(error).message}`,
        fix: isPostgres(choice.catalog)
          ? "start the PostgreSQL server (a server that does not answer within [workspace] backend_timeout_ms counts as down) or fix [workspace] catalog (the password comes from PGPASSWORD), then run cairn doctor again"
          : `check that ${dir} is a writable directory, then run cairn doctor again`,
      });
    }
    try {
      const blobs = await openBlobStore(dir, choice);
      try {
        const probe = randomBytes(32);
        const { sha256 } = await blobs.put(probe);
        const back = await blobs.read(sha256, probe.byteLength);
        await blobs.delete(sha256);
        if (!Buffer.from(back).equals(probe)) throw new Error("the probe blob came back different");
      } finally {
        await blobs.close();
      }
      steps.push({
        step: "blobs",
        status: "ok",
        detail: `${isS3(choice.blobs) ? "S3" : "files"} at ${blobsName}: a probe blob written, read back verified and removed`,
      });
    } catch (error) {
      steps.push({
        step: "blobs",
        status: "FAIL",
        detail: `${blobsName}: ${toCairnError(error).message}`,
        fix: isS3(choice.blobs)
          ? "check the object store answers at [workspace] endpoint within backend_timeout_ms, the bucket exists, region/path_style, and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, then run cairn doctor again"
          : `check that ${join(dir, "blobs")} is a writable directory, then run cairn doctor again`,
      });
    }
    return steps;
  }
}

/** Sets `env`'s variables in process.env; returns what puts the previous values back. */
function overlay(env: Record<string, string> | undefined): () => void {
  const saved = Object.keys(env ?? {}).map((key) => [key, process.env[key]] as const);
  Object.assign(process.env, env);
  return () => {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}
