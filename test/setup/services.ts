// Started once per test run: a real PostgreSQL server (from the installed packages) and an S3-compatible server (from
// the npm registry), for the suites that run every contract against PostgreSQL + S3. Stopped when the run ends.
import type { TestProject } from "vitest/node";
import { startPostgres, startS3 } from "../../scripts/services.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    /** postgres:// URL of the run's server (trust authentication on loopback). */
    postgresUrl: string;
    /** The run's S3-compatible server and its bucket. */
    s3: { endpoint: string; bucket: string; region: string; accessKeyId: string; secretAccessKey: string };
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [postgres, s3] = await Promise.all([startPostgres(), startS3({ bucket: "cairn-test" })]);
  project.provide("postgresUrl", postgres.url);
  const { endpoint, bucket, region, accessKeyId, secretAccessKey } = s3;
  project.provide("s3", { endpoint, bucket, region, accessKeyId, secretAccessKey });
  return async () => {
    await Promise.all([postgres.stop(), s3.stop()]);
  };
}
