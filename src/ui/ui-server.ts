// `cairn ui`'s own server: plain node:http on a loopback address, answering every request with the web view's
// handler. `cairn serve --transport http --ui` mounts the same handler beside /mcp instead.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { CairnError, ErrorCode } from "../errors.js";
import { isLoopbackHost } from "../http-guards/loopback.js";
import type { UiHandler } from "./handler.js";

export const DEFAULT_UI_PORT = 8732;

export interface UiServeOptions {
  /** A loopback address: the view has no --allow-remote of its own. @default "127.0.0.1" */
  host?: string;
  /** TCP port; 0 picks a free one. @default 8732 */
  port?: number;
}

/** A listening web view; `origin` is `http://host:port` with the port bound. */
export interface RunningUi {
  readonly origin: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Listens and resolves once it does; throws INVALID_ARGUMENT for a non-loopback host, the listen error as it comes. */
export async function serveUi(handler: UiHandler, options: UiServeOptions = {}): Promise<RunningUi> {
  const address = options.host ?? "127.0.0.1";
  if (!isLoopbackHost(address)) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, `cairn ui listens on loopback only, not ${address}`);
  }
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? DEFAULT_UI_PORT, address, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://${address.includes(":") ? `[${address}]` : address}:${port}`,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
