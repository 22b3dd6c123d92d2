// The shared backends of a test run (test/setup/services.ts): a fresh PostgreSQL schema per catalog, a fresh key
// prefix per blob store, so tests never see each other's data. The first call in a test file asks the run's broker,
// which starts the server on the first request of the run; files that never call these start nothing.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { inject } from "vitest";

interface S3Service {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

// One request to the broker, made synchronously (a short-lived node process) so the helpers stay plain functions that
// test tables and default parameters can call; its answer is kept for the rest of the file.
const ASK = `const r = await fetch(process.argv[1]); const t = await r.text();
if (!r.ok) { process.stderr.write(t); process.exit(1); } process.stdout.write(t);`;
const answers = new Map<string, unknown>();

function service<T>(name: "postgres" | "s3"): T {
  if (!answers.has(name)) {
    try {
      const out = execFileSync(
        process.execPath,
        ["--input-type=module", "-e", ASK, `${inject("servicesUrl")}/${name}`],
        {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      answers.set(name, JSON.parse(out));
    } catch (error) {
      const stderr = (error as { stderr?: string }).stderr;
      throw new Error(stderr ? stderr : `the run's service broker did not answer for ${name}: ${String(error)}`);
    }
  }
  return answers.get(name) as T;
}

/** A postgres:// URL of the run's server naming a schema no other catalog uses. */
export function freshPostgresUrl(): string {
  const url = new URL(service<{ url: string }>("postgres").url);
  url.searchParams.set("schema", `t_${randomBytes(8).toString("hex")}`);
  return url.toString();
}

/** The run's S3-compatible server, with a key prefix no other store uses. */
export function freshS3(): S3Service & { prefix: string } {
  return { ...service<S3Service>("s3"), prefix: `t-${randomBytes(8).toString("hex")}` };
}
