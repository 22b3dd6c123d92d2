// Red team for the kernel sandbox (issue 27): real curl, git, find, tar, sed, sort, awk and sh, allowed bare and with
// any arguments, try to create, change or delete files outside their scratch /tmp, and to reach a listener on
// loopback; a canary tree (the programs' working directory, HOME, a workspace) must come out byte for byte the same,
// the listener must hear nothing unless the program is granted the network, and the runner must answer afterwards.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findOnPath } from "../../src/cli-programs/allowed-programs.js";
import { type CliRunner, createCliRunner } from "../../src/cli-programs/cli-runner.js";
import { probeKernelSandbox } from "../../src/cli-programs/kernel-sandbox.js";
import { type CliConfig, ConfigSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log.js";
import { caught } from "./processes.js";

const sandbox = await probeKernelSandbox(findOnPath("bwrap", process.env.PATH ?? ""), 1 << 20);
const quiet = createLogger("cli", () => {});
// Outside /tmp when possible, so the canary is seen through the sandbox's read-only root rather than re-bound.
const base = existsSync("/var/tmp") ? "/var/tmp" : tmpdir();
const root = mkdtempSync(join(base, "cairn-sandbox-"));
const CANARY = join(root, "project");
const HOME = join(root, "home");
const WORKSPACE = join(root, "workspace");
const SHM = `/dev/shm/cairn-canary-${randomBytes(4).toString("hex")}`;
const PROGRAMS = ["curl", "git", "find", "tar", "sed", "sort", "jq", "awk", "sh", "bash", "cat"];

/** Every path under `dir` with its type, mode, size, modification time, content hash or link target. */
function snapshot(dir: string): Record<string, string> {
  const seen: Record<string, string> = {};
  const walk = (path: string) => {
    const stat = lstatSync(path);
    const head = `${stat.mode.toString(8)} ${stat.size} ${stat.mtimeMs}`;
    if (stat.isSymbolicLink()) seen[path] = `link ${head} ${readlinkSync(path)}`;
    else if (stat.isDirectory()) {
      seen[path] = `dir ${head}`;
      for (const entry of readdirSync(path)) walk(join(path, entry));
    } else seen[path] = `file ${head} ${createHash("sha256").update(readFileSync(path)).digest("hex")}`;
  };
  walk(dir);
  return seen;
}

const config = (anyArguments: boolean, network: string[] = []): CliConfig =>
  ConfigSchema.parse({
    cli: {
      mode: "allowlist",
      allow: PROGRAMS,
      programs: Object.fromEntries(
        PROGRAMS.map((name) => [
          name,
          {
            allow_any_arguments: anyArguments || name === "sh" || name === "bash" || name === "awk",
            ...(network.includes(name) ? { network: true } : {}),
          },
        ]),
      ),
    },
  }).cli;

const env = { PATH: process.env.PATH, HOME, LANG: "C.UTF-8", TZ: "UTC" };
let bare: CliRunner;
let open: CliRunner;
let before: Record<string, string>;

beforeAll(() => {
  for (const dir of [CANARY, HOME, WORKSPACE, join(CANARY, "sub")]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(CANARY, "notes.txt"), "beta\nalpha\n");
  writeFileSync(join(CANARY, "sub", "keep.txt"), "keep\n");
  writeFileSync(join(HOME, ".profile"), "# canary\n");
  writeFileSync(join(WORKSPACE, "catalog.db"), "canary");
  symlinkSync("notes.txt", join(CANARY, "link"));
  execFileSync("tar", ["-cf", join(root, "a.tar"), "-C", CANARY, "notes.txt"]);
  execFileSync("git", ["init", "-q", CANARY]);
  before = snapshot(root);
  bare = createCliRunner(config(false), { cwd: CANARY, env, logger: quiet });
  open = createCliRunner(config(true), { cwd: CANARY, env, logger: quiet });
});
afterAll(async () => {
  await Promise.all([bare?.close(), open?.close()]);
  rmSync(root, { recursive: true, force: true });
  rmSync(SHM, { force: true });
});

const target = (name: string) => join(CANARY, name);
// Each writes, deletes or changes something outside the scratch /tmp, by a different program and route.
const WRITES: [string, string[]][] = [
  ["curl", ["-s", "-T", join(CANARY, "notes.txt"), `file://${target("uploaded")}`]],
  ["curl", ["-s", "-T", join(HOME, ".profile"), `file://${target("notes.txt")}`]],
  ["curl", ["-s", "-T", join(CANARY, "notes.txt"), `file://${join(WORKSPACE, "catalog.db")}`]],
  ["sh", ["-c", `echo x > ${target("f")}`]],
  ["sh", ["-c", `echo x >> ${target("notes.txt")}`]],
  ["sh", ["-c", `rm -rf ${CANARY}/*`]],
  ["sh", ["-c", `mv ${target("notes.txt")} ${target("moved")}`]],
  ["sh", ["-c", `chmod 777 ${target("notes.txt")}; touch -d 2001-01-01 ${target("sub/keep.txt")}`]],
  ["sh", ["-c", `ln -s /etc/passwd ${target("evil")}; mkdir ${target("newdir")}`]],
  ["sh", ["-c", "echo x > f; echo y > $HOME/.bashrc; echo z > ~/.profile"]],
  ["sh", ["-c", `echo x > ${join(WORKSPACE, "catalog.db")}; rm -f ${join(WORKSPACE, "catalog.db")}`]],
  ["bash", ["-c", `echo x > ${target("bash")}`]],
  ["tar", ["-xf", join(root, "a.tar"), "-C", join(CANARY, "sub")]],
  ["tar", ["-cf", target("new.tar"), "notes.txt"]],
  ["sed", ["-i", "s/alpha/omega/", "notes.txt"]],
  ["sort", ["-o", "notes.txt", "notes.txt"]],
  ["find", [CANARY, "-name", "*.txt", "-delete"]],
  ["find", [".", "-fprint", target("listing")]],
  ["git", ["init", "-q", target("repo")]],
  ["git", ["-C", CANARY, "config", "core.pager", "touch x"]],
  ["git", ["-C", CANARY, "commit", "--allow-empty", "-m", "x"]],
  ["awk", [`BEGIN { print "x" > "${target("awk")}"; system("touch ${target("awk2")}") }`]],
  ["awk", [`BEGIN { print "x" > "${join(HOME, "awk")}" }`]],
];

describe.skipIf(!sandbox.ok)("issue 27: programs in the kernel sandbox", () => {
  it.each(WRITES)("%s %j changes nothing outside its scratch /tmp", async (program, args) => {
    const result = await open.run(program, args);
    expect(result.exit_code).not.toBe(0);
    // The failure says what the sandbox forbids, for a program that printed nothing (curl -s: exit 23).
    expect(result.sandbox).toMatch(
      /files are read-only but \/tmp.*no network \(set network = true in \[cli\.programs\./,
    );
    expect(snapshot(root)).toEqual(before);
    expect(existsSync(SHM)).toBe(false);
    // The runner answers afterwards.
    expect(await open.run("sh", ["-c", "echo ok"])).toMatchObject({ exit_code: 0, stdout: "ok\n" });
  });

  it("still refuses by the built-in rules first, with their message", async () => {
    const error = await caught(bare.run("sort", ["-o", "notes.txt", "notes.txt"]));
    expect(error.code).toBe("NOT_ALLOWED");
    expect(error.message).toContain('"-o"');
    // An upload to a file: URL is not in curl's rules: only the sandbox stops it.
    const upload = await bare.run("curl", ["-s", "-T", "notes.txt", `file://${target("uploaded")}`]);
    expect(upload.exit_code).not.toBe(0);
    expect(snapshot(root)).toEqual(before);
  });

  it("gives each call a private, writable /tmp that starts empty and is gone afterwards", async () => {
    const script = 'ls -A /tmp; echo x > /tmp/f; mkdir /tmp/x && tar -xf "$0" -C /tmp/x && cat /tmp/f /tmp/x/notes.txt';
    const first = await open.run("sh", ["-c", script, join(root, "a.tar")]);
    expect(first).toMatchObject({ exit_code: 0, stdout: "x\nbeta\nalpha\n" });
    const second = await open.run("sh", ["-c", "ls -A /tmp"]);
    expect(second).toMatchObject({ exit_code: 0, stdout: "" });
    // /dev/shm is private too.
    expect(await open.run("sh", ["-c", `echo x > ${SHM} && cat ${SHM}`])).toMatchObject({ stdout: "x\n" });
    expect(existsSync(SHM)).toBe(false);
    expect(await open.run("sort", ["-o", "/tmp/s", "notes.txt"])).toMatchObject({ exit_code: 0 });
    expect(await open.run("sed", ["-n", "1p", "notes.txt"])).toMatchObject({ stdout: "beta\n" });
    expect(await open.run("jq", ["-n", "[1, 2] | add"])).toMatchObject({ exit_code: 0, stdout: "3\n" });
    expect(await open.run("git", ["-C", CANARY, "status", "--short"])).toMatchObject({ exit_code: 0 });
  });

  it("bounds the scratch /tmp at [cli] scratch_mb", async () => {
    const small = createCliRunner({ ...config(true), scratch_mb: 1 }, { cwd: CANARY, env, logger: quiet });
    try {
      const result = await small.run("sh", ["-c", "head -c 2000000 /dev/zero > /tmp/big"]);
      expect(result.exit_code).not.toBe(0);
      expect(result.stderr).toMatch(/No space left/);
    } finally {
      await small.close();
    }
  });

  it("runs programs without capabilities, with no new privileges, and not as root", async () => {
    const { stdout } = await open.run("sh", ["-c", "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status"]);
    const [uid, ...status] = stdout.trim().split("\n");
    expect(uid).not.toBe("0");
    expect(status).toEqual(["CapEff:\t0000000000000000", "NoNewPrivs:\t1"]);
    // No user namespace inside (where it would have every capability again), nor a controlling terminal to push
    // input into (TIOCSTI) even when Cairn was started from one.
    const script = "unshare --user true 2>/dev/null || echo refused; cat /dev/tty 2>/dev/null || echo no-tty";
    const nested = await open.run("sh", ["-c", script]);
    expect(nested.stdout).toBe("refused\nno-tty\n");
  });

  it("shows Cairn's own state directories empty, unless one holds the working directory", async () => {
    const runner = createCliRunner(config(true), { cwd: CANARY, env, logger: quiet, hidden: [WORKSPACE, root] });
    try {
      const listing = await runner.run("sh", ["-c", `ls -A ${WORKSPACE}; cat ${join(WORKSPACE, "catalog.db")}`]);
      expect(listing.stdout).toBe("");
      expect(listing.exit_code).not.toBe(0);
      // `root` holds the working directory: hiding it would hide the project, so it stays.
      expect(await runner.run("cat", ["notes.txt"])).toMatchObject({ exit_code: 0, stdout: "beta\nalpha\n" });
      expect((await runner.run("sh", ["-c", `touch ${join(WORKSPACE, "x")}`])).exit_code).not.toBe(0);
      expect(snapshot(root)).toEqual(before);
    } finally {
      await runner.close();
    }
  });

  it("hides /run, where services keep their sockets (docker, dbus, PostgreSQL)", async () => {
    expect(await open.run("sh", ["-c", "ls -A /run"])).toMatchObject({ exit_code: 0, stdout: "" });
    expect((await open.run("sh", ["-c", "touch /run/x"])).exit_code).not.toBe(0);
  });
});

describe.skipIf(!sandbox.ok)("issue 27: the network in the kernel sandbox", () => {
  let server: Server;
  let port = 0;
  let connections = 0;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    server = createServer((socket) => {
      connections++;
      sockets.add(socket);
      socket.end("HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nhi");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const ATTEMPTS: [string, (port: number) => string[]][] = [
    ["curl", (p) => ["-s", "--max-time", "5", `http://127.0.0.1:${p}/`]],
    ["curl", (p) => ["-s", "--max-time", "5", `http://localhost:${p}/`]],
    ["git", (p) => ["ls-remote", `http://127.0.0.1:${p}/repo`]],
    ["bash", (p) => ["-c", `exec 3<>/dev/tcp/127.0.0.1/${p} && echo connected`]],
    ["sh", (p) => ["-c", `curl -s --max-time 5 http://127.0.0.1:${p}/ || bash -c 'echo > /dev/tcp/127.0.0.1/${p}'`]],
  ];

  it.each(ATTEMPTS)("%s reaches no listener on loopback unless granted", async (program, args) => {
    const result = await open.run(program, args(port));
    expect(result.stdout).not.toContain("connected");
    expect(result.stdout).not.toContain("hi");
    expect(connections).toBe(0);
  });

  it("lets a program granted network = true reach it", async () => {
    const granted = createCliRunner(config(true, ["curl"]), { cwd: CANARY, env, logger: quiet });
    try {
      const result = await granted.run("curl", ["-s", "--max-time", "5", `http://127.0.0.1:${port}/`]);
      expect(result).toMatchObject({ exit_code: 0, stdout: "hi" });
      expect(connections).toBe(1);
      // The grant is the program's alone.
      await granted.run("bash", ["-c", `exec 3<>/dev/tcp/127.0.0.1/${port}`]);
      expect(connections).toBe(1);
    } finally {
      await granted.close();
    }
  });
});

describe.skipIf(!sandbox.ok || !sandbox.sandbox.filter)("issue 27: Unix sockets in the kernel sandbox", () => {
  // A socket file on the read-only tree, outside /tmp and /run: connect() needs no write to the mount.
  const path = join(root, "service.sock");
  let server: Server;
  let connections = 0;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    server = createServer((socket) => {
      connections++;
      sockets.add(socket);
      socket.end("HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nhi");
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(path, { force: true });
  });

  it.each([
    ["without network", [] as string[]],
    ["with network = true", ["curl"]],
  ])("reaches no Unix socket listener %s", async (_, network) => {
    const runner = createCliRunner(config(true, network), { cwd: CANARY, env, logger: quiet });
    try {
      const result = await runner.run("curl", ["-s", "--max-time", "5", "--unix-socket", path, "http://x/"]);
      expect(result.exit_code).not.toBe(0);
      expect(result.stdout).toBe("");
      expect(connections).toBe(0);
      // The refusal is of the socket only: the same program reads files and the runner answers.
      expect(await runner.run("curl", ["-s", `file://${join(CANARY, "notes.txt")}`])).toMatchObject({
        exit_code: 0,
        stdout: "beta\nalpha\n",
      });
    } finally {
      await runner.close();
    }
  });

  it("is reachable from outside the sandbox, so the listener is real", async () => {
    const { request } = await import("node:http");
    const body = await new Promise<string>((resolve, reject) => {
      request({ socketPath: path, path: "/", agent: false }, (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8");
        });
        res.on("end", () => resolve(text));
      })
        .on("error", reject)
        .end();
    });
    expect(body).toBe("hi");
    connections = 0;
  });
});

describe.skipIf(!sandbox.ok)("issue 27: ways past the kernel sandbox found by attack", () => {
  it("issue 27: a descriptor Cairn inherited open for writing is /dev/null to the program", () => {
    // Whatever starts Cairn may leave a file open without close-on-exec (`cairn serve 100>>log`); Node hands such a
    // descriptor to every child, and bwrap hands it into the sandbox, where /proc/self/fd/100 writes through it.
    // (Node marks the lowest few close-on-exec at its start; one further up stays inherited.)
    const outside = join(root, "inherited.log");
    writeFileSync(outside, "canary\n");
    const built = join(import.meta.dirname, "../../dist/cli-programs/cli-runner.js");
    const script = `
      const { createCliRunner } = await import(${JSON.stringify(built)});
      const { ConfigSchema } = await import(${JSON.stringify(join(built, "../../config/schema.js"))});
      const { createLogger } = await import(${JSON.stringify(join(built, "../../log.js"))});
      const cli = ConfigSchema.parse({ cli: { mode: "allowlist", allow: ["sh"], programs: { sh: { allow_any_arguments: true } } } }).cli;
      const runner = createCliRunner(cli, { cwd: ${JSON.stringify(CANARY)}, logger: createLogger("cli", () => {}) });
      const result = await runner.run("sh", ["-c", "echo x > /proc/self/fd/100; readlink /proc/self/fd/100"]);
      console.log(JSON.stringify(result));
      await runner.close();`;
    const fd = openSync(outside, "a");
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe", ...Array(97).fill("ignore"), fd],
    });
    closeSync(fd);
    const result = JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(result.stdout).toBe("/dev/null\n");
    expect(readFileSync(outside, "utf8")).toBe("canary\n");
  });

  it("issue 27: a workspace inside a working directory under /tmp stays hidden", async () => {
    // The working directory under /tmp is re-bound over the scratch; the workspace in it must be hidden again after.
    const project = mkdtempSync(join("/tmp", "cairn-project-"));
    const workspace = join(project, ".cairn");
    mkdirSync(workspace);
    writeFileSync(join(workspace, "catalog.db"), "secret");
    writeFileSync(join(project, "notes.txt"), "visible\n");
    const runner = createCliRunner(config(true), { cwd: project, env, logger: quiet, hidden: [workspace] });
    try {
      expect(await runner.run("cat", ["notes.txt"])).toMatchObject({ exit_code: 0, stdout: "visible\n" });
      const listing = await runner.run("sh", ["-c", "ls -A .cairn; cat .cairn/catalog.db"]);
      expect(listing.stdout).toBe("");
      expect(listing.exit_code).not.toBe(0);
    } finally {
      await runner.close();
      rmSync(project, { recursive: true, force: true });
    }
  });

  const python = findOnPath("python3", process.env.PATH ?? "");
  it.skipIf(python === undefined)(
    "issue 27: a Unix datagram socketpair cannot sendto() a listener's socket file",
    async () => {
      // A read-only mount does not stop sendto() to a socket path, and socket(AF_UNIX) is refused but socketpair was
      // not: its datagram sockets send to any path (a stream or seqpacket pair stays with its peer).
      const { execFile } = await import("node:child_process");
      const path = join(root, "dgram.sock");
      // The listener prints the first datagram it gets: the program's, or the sentinel sent from outside after it.
      const listener = new Promise<string>((resolve) => {
        execFile(
          python as string,
          [
            "-c",
            `import socket,os\ns=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(${JSON.stringify(path)}); os.chmod(${JSON.stringify(path)}, 0o777)\nprint(s.recv(100).decode())`,
          ],
          (_error, stdout) => resolve(stdout),
        );
      });
      while (!existsSync(path)) await new Promise((resolve) => setImmediate(resolve));
      const send = `import socket\ntry:\n  a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b"escaped", ${JSON.stringify(path)}); print("sent")\nexcept OSError as e: print(e.strerror)`;
      const result = await open.run("sh", ["-c", `${python} -c '${send}'`]);
      expect(result.stdout).toBe("Permission denied\n");
      execFileSync(python as string, [
        "-c",
        `import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"sentinel", ${JSON.stringify(path)})`,
      ]);
      expect(await listener).toBe("sentinel\n");
      // Stream pairs, which programs use between their own processes, still work.
      const pair = await open.run("sh", [
        "-c",
        `${python} -c 'import socket; a, b = socket.socketpair(); a.send(b"ok"); print(b.recv(2).decode())'`,
      ]);
      expect(pair.stdout).toBe("ok\n");
    },
  );

  const perl = findOnPath("perl", process.env.PATH ?? "");
  it.skipIf(perl === undefined)(
    "issue 27: a program that clears its parent-death signal still dies with Cairn",
    async () => {
      // The program is PID 1 of its namespace and bwrap set PR_SET_PDEATHSIG on it: had it cleared the signal (prctl
      // PR_SET_PDEATHSIG 0), a Cairn killed outright would leave it, and everything it started, running.
      const t = `cairn-orphan-${randomBytes(4).toString("hex")}`;
      const prctl = process.arch === "arm64" ? 167 : 157;
      const built = join(import.meta.dirname, "../../dist/cli-programs/cli-runner.js");
      const program = `exec perl -e 'syscall(${prctl}, 1, 0); $0 = q(${t}); sleep 120'`;
      const script = `
      const { createCliRunner } = await import(${JSON.stringify(built)});
      const sh = { allow_any_arguments: true, deny_options: [], allow_options: [], env: [] };
      const cli = createCliRunner({ mode: "allowlist", allow: ["sh"], timeout_ms: 60000, max_concurrent: 1, confinement: "kernel", scratch_mb: 1, programs: { sh } }, {});
      await cli.run("sh", ["-c", ${JSON.stringify(program)}]);`;
      const named = () =>
        readdirSync("/proc")
          .filter((pid) => /^\d+$/.test(pid))
          .filter((pid) => {
            try {
              return readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith(t);
            } catch {
              return false;
            }
          });
      const cairn = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: "ignore" });
      try {
        while (named().length === 0) await new Promise((resolve) => setImmediate(resolve));
        cairn.kill("SIGKILL");
        while (named().some((pid) => !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z "))) {
          await new Promise((resolve) => setImmediate(resolve));
        }
      } finally {
        for (const pid of named()) process.kill(Number(pid), "SIGKILL");
      }
    },
  );

  it.skipIf(perl === undefined)("issue 27: no vsock socket is made, with or without the network", async () => {
    // vsock is not namespaced: from an empty network namespace it still reaches the hypervisor (CID 2) and the host.
    const probe = 'socket(S, 40, 1, 0) ? print "made" : print "refused: $!"';
    const granted = createCliRunner(config(true, ["sh"]), { cwd: CANARY, env, logger: quiet });
    try {
      for (const runner of [open, granted]) {
        const result = await runner.run("sh", ["-c", `perl -e '${probe}'`]);
        expect(result.stdout).toBe("refused: Permission denied");
      }
    } finally {
      await granted.close();
    }
  });
});

describe("issue 27: where the kernel sandbox cannot start", () => {
  const bin = join(root, "bin");
  beforeAll(() => {
    mkdirSync(bin, { recursive: true });
    // A PATH with the programs but no bwrap.
    for (const name of ["sh", "echo"]) symlinkSync(findOnPath(name, process.env.PATH ?? "") as string, join(bin, name));
  });
  const shOnly = (confinement: "kernel" | "none"): CliConfig => ({
    ...config(true),
    allow: ["sh", "echo"],
    confinement,
    programs: { sh: { allow_any_arguments: true, deny_options: [], allow_options: [], env: [] } },
  });

  it("refuses programs with NOT_ALLOWED saying how to install bubblewrap or opt out", async () => {
    const runner = createCliRunner(shOnly("kernel"), { env: { PATH: bin }, logger: quiet });
    try {
      const error = await caught(runner.run("echo", ["hi"]));
      expect(error.code).toBe("NOT_ALLOWED");
      expect(error.message).toContain("bwrap (bubblewrap) was not found on PATH");
      expect(error.message).toContain("apt-get install bubblewrap");
      expect(error.message).toContain('[cli] confinement = "none"');
      expect(await runner.confinement()).toMatchObject({ confinement: "kernel", problem: error.message });
      // The argument rules still answer first, with their own message.
      expect((await caught(runner.run("rm", []))).message).toContain("not allowed");
    } finally {
      await runner.close();
    }
  });

  it('runs them under the other layers with [cli] confinement = "none"', async () => {
    const runner = createCliRunner(shOnly("none"), { env: { PATH: bin }, logger: quiet });
    try {
      expect(await runner.run("echo", ["hi"])).toMatchObject({ exit_code: 0, stdout: "hi\n" });
      expect(await runner.confinement()).toMatchObject({ confinement: "none" });
    } finally {
      await runner.close();
    }
  });

  // User namespaces turned off, for real: a user namespace whose limit of nested ones is 0.
  const unshare = findOnPath("unshare", process.env.PATH ?? "");
  it.skipIf(!sandbox.ok || unshare === undefined)("refuses programs when user namespaces are off", () => {
    const built = join(import.meta.dirname, "../../dist/cli-programs/cli-runner.js");
    const script = `
      const { createCliRunner } = await import(${JSON.stringify(built)});
      const { createLogger } = await import(${JSON.stringify(join(built, "../../log.js"))});
      const cli = createCliRunner({ mode: "allowlist", allow: ["echo"], timeout_ms: 10000, max_concurrent: 1, confinement: "kernel", scratch_mb: 1, programs: {} }, { logger: createLogger("cli", () => {}) });
      try { await cli.run("echo", ["hi"]); console.log("ran"); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
    const shell = `echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" --input-type=module -e "$1"`;
    const child = spawnSync(
      unshare as string,
      ["--user", "--map-root-user", "sh", "-c", shell, process.execPath, script],
      {
        encoding: "utf8",
      },
    );
    const reply = JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(reply.code).toBe("NOT_ALLOWED");
    expect(reply.message).toContain("could not start a sandbox");
    expect(reply.message).toContain("user namespaces");
  });
});
