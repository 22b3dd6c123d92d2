// The shared backends of a test run (test/setup/services.ts): a fresh PostgreSQL schema per catalog, a fresh key
// prefix per blob store, so tests never see each other's data.
import { randomBytes } from "node:crypto";
import { inject } from "vitest";

/** A postgres:// URL of the run's server naming a schema no other catalog uses. */
export function freshPostgresUrl(): string {
  const url = new URL(inject("postgresUrl"));
  url.searchParams.set("schema", `t_${randomBytes(8).toString("hex")}`);
  return url.toString();
}

/** The run's S3-compatible server, with a key prefix no other store uses. */
export function freshS3(): {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  prefix: string;
} {
  return { ...inject("s3"), prefix: `t-${randomBytes(8).toString("hex")}` };
}
