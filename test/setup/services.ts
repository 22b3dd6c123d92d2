// The run's shared servers, started on demand: a loopback broker (this globalSetup, in vitest's main process) starts
// PostgreSQL or S3 on the first request for it from any test file, answers every later request with the same server,
// and stops only what it started when the run ends. A run whose files ask for neither starts neither.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { startPostgres, startS3 } from "../../scripts/services.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    /** http:// URL of the run's service broker: GET /postgres or /s3 starts that server once and answers how to reach it. */
    servicesUrl: string;
  }
}

/** A server a test file can ask for: what the file needs to reach it, and how the run stops it. */
interface Started {
  answer: unknown;
  stop: () => Promise<void>;
}

const SERVICES: Record<string, () => Promise<Started>> = {
  postgres: async () => {
    const { url, stop } = await startPostgres();
    return { answer: { url }, stop };
  },
  s3: async () => {
    const { stop, ...answer } = await startS3({ bucket: "cairn-test" });
    return { answer, stop };
  },
};

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = new Map<string, Promise<Started>>();
  const broker = createServer((request, response) => {
    const name = (request.url ?? "/").slice(1);
    const start = SERVICES[name];
    if (request.method !== "GET" || start === undefined) {
      response.writeHead(404, { "content-type": "text/plain" }).end(`no service ${JSON.stringify(name)}`);
      return;
    }
    let service = started.get(name);
    if (service === undefined) {
      service = start();
      started.set(name, service);
    }
    // A failed start is kept too: every file that asks gets the same error instead of a retry each.
    service.then(
      ({ answer }) => response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer)),
      (error: unknown) =>
        response
          .writeHead(503, { "content-type": "text/plain" })
          .end(`the test run could not start ${name}: ${error instanceof Error ? error.message : String(error)}`),
    );
  });
  await new Promise<void>((listening) => broker.listen(0, "127.0.0.1", listening));
  project.provide("servicesUrl", `http://127.0.0.1:${(broker.address() as AddressInfo).port}`);
  return async () => {
    await new Promise((closed) => broker.close(closed));
    await Promise.allSettled([...started.values()].map(async (service) => (await service).stop()));
  };
}
