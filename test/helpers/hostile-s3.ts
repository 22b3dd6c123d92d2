// Test helper: object stores that misbehave on loopback. A TCP server that accepts and reads but never writes, and
// an HTTP proxy in front of a real S3-compatible server whose behaviour a test switches between requests: forward,
// never answer, send the head then stall the body, or trickle the body one byte a second.
import { createServer as createHttpServer, type IncomingMessage, request, type Server } from "node:http";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";

export interface Hostile {
  endpoint: string;
  /** Requests (or connections, for the silent server) received so far. */
  readonly received: number;
  close(): Promise<void>;
}

function closer(server: Server | ReturnType<typeof createNetServer>, sockets: Set<Socket>) {
  return () =>
    new Promise<void>((done) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => done());
    });
}

/** Accepts every connection and reads what it is sent; never writes a byte. */
export async function silentServer(): Promise<Hostile> {
  const sockets = new Set<Socket>();
  let received = 0;
  const server = createNetServer((socket) => {
    received++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    socket.resume();
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get received() {
      return received;
    },
    close: closer(server, sockets),
  };
}

export type ProxyMode = "forward" | "silent" | "stall-body" | "trickle";

export interface HostileProxy extends Hostile {
  /** What the proxy does with the requests it receives from now on (those `when` selects; all by default). */
  set(mode: ProxyMode, when?: (req: IncomingMessage) => boolean): void;
}

/**
 * An HTTP proxy in front of `target`. "silent" reads a request and never answers it; "stall-body" forwards the
 * answer's head and never its body; "trickle" sends the body one byte a second.
 */
export async function hostileProxy(target: string): Promise<HostileProxy> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let received = 0;
  let mode: ProxyMode = "forward";
  let when: (req: IncomingMessage) => boolean = () => true;
  const server = createHttpServer((req, res) => {
    received++;
    const action = when(req) ? mode : "forward";
    if (action === "silent") {
      req.resume();
      return;
    }
    const upstream = request(new URL(req.url ?? "/", target), { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      if (action === "forward") {
        up.pipe(res);
        return;
      }
      res.flushHeaders();
      if (action === "stall-body") {
        up.resume();
        return;
      }
      const body: Buffer[] = [];
      up.on("data", (chunk: Buffer) => body.push(chunk));
      up.on("end", () => {
        const bytes = Buffer.concat(body);
        let at = 0;
        const drip = setInterval(() => {
          if (at >= bytes.length || res.destroyed) {
            clearInterval(drip);
            timers.delete(drip);
            res.end();
            return;
          }
          res.write(bytes.subarray(at, at + 1));
          at++;
        }, 1000);
        timers.add(drip);
      });
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const close = closer(server, sockets);
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get received() {
      return received;
    },
    set(next, select = () => true) {
      mode = next;
      when = select;
    },
    async close() {
      for (const timer of timers) clearInterval(timer);
      await close();
    },
  };
}
