// The web view's changing actions over raw HTTP (decision 0234): refused without the flag; with it, a POST must be
// same-origin, form-encoded, small, carry the form token its confirmation page gave this sign-in for this exact
// target, and come from a role that may; a version saved after the page makes the delete a 409 that deletes nothing;
// success is a 303 to a notice, and the event log names the identity and role. Built CLI, real workspace.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openWorkspace } from "../../src/workspace/workspace.js";
import { MAIN } from "../helpers/mcp-client.js";
import { type RawReply, type RunningView, rawRequest, startView } from "../helpers/ui-server.js";

const dir = mkdtempSync(join(tmpdir(), "cairn-ui-actions-"));
const WS = join(dir, "ws");
const CONFIG = join(dir, "cairn.toml");
const TOKENS = {
  CAIRN_TOKEN_READER: "reader-token-0123456789abcdefghij",
  CAIRN_TOKEN_WRITER: "writer-token-0123456789abcdefghij",
  CAIRN_TOKEN_APPROVER: "approver-token-0123456789abcdefgh",
};
const READER = TOKENS.CAIRN_TOKEN_READER;
const WRITER = TOKENS.CAIRN_TOKEN_WRITER;
const APPROVER = TOKENS.CAIRN_TOKEN_APPROVER;
const FORM = "application/x-www-form-urlencoded";
const ids: Record<string, string> = {};
const views: RunningView[] = [];

beforeAll(async () => {
  writeFileSync(
    CONFIG,
    `[identity]
name = "ana"
role = "writer"

[[http.tokens]]
token_env = "CAIRN_TOKEN_READER"
identity = "rita"
role = "reader"

[[http.tokens]]
token_env = "CAIRN_TOKEN_WRITER"
identity = "will"
role = "writer"

[[http.tokens]]
token_env = "CAIRN_TOKEN_APPROVER"
identity = "alice"
role = "approver"
`,
  );
  const workspace = await openWorkspace(WS, { chunkInBackground: false });
  try {
    for (const name of ["notes/plan", "notes/stale", "notes/keep", "notes/gone", "notes/history", "notes/local"]) {
      const first = await workspace.save({ name, content: `${name} one\n` });
      const second = await workspace.save({ name, content: `${name} one\ntwo\n`, expected_version: 1 });
      ids[`${name}@1`] = first.artifact_id;
      ids[`${name}@2`] = second.artifact_id;
    }
    const base = await workspace.save({ name: "data/base", content: "base\n" });
    await workspace.save({ name: "data/derived", content: "derived\n", dependencies: [base.artifact_id] });
  } finally {
    await workspace.close();
  }
});

afterAll(async () => {
  await Promise.all(views.map((v) => v.stop()));
  rmSync(dir, { recursive: true, force: true });
});

async function view(args: string[], env: Record<string, string> = {}): Promise<RunningView> {
  const running = await startView(WS, args, { CAIRN_CONFIG: CONFIG, ...TOKENS, ...env });
  views.push(running);
  return running;
}

const host = (v: RunningView) => ({ Host: `127.0.0.1:${v.port}` });
const own = (v: RunningView) => ({ ...host(v), Origin: `http://127.0.0.1:${v.port}` });
const as = (token: string) => ({ Authorization: `Bearer ${token}` });

function get(v: RunningView, path: string, headers: Record<string, string>): Promise<RawReply> {
  return rawRequest(v.port, "GET", path, { ...host(v), ...headers });
}

function post(v: RunningView, path: string, headers: Record<string, string>, body: string): Promise<RawReply> {
  return rawRequest(v.port, "POST", path, headers, body);
}

/** The confirmation page's form: where it posts and its fields (the form token among them). */
async function confirmation(
  v: RunningView,
  path: string,
  token: string,
): Promise<{ page: RawReply; action: string; fields: Record<string, string> }> {
  const page = await get(v, path, as(token));
  expect(page.status).toBe(200);
  const form = /<form class="confirm" method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(page.body);
  if (form === null) throw new Error(`no confirmation form on ${path}: ${page.body}`);
  const fields: Record<string, string> = {};
  for (const m of (form[2] as string).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[m[1] as string] = (m[2] as string).replace(/&amp;/g, "&");
  }
  return { page, action: form[1] as string, fields };
}

const encode = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Whether the workspace still holds `ref`, read by the built CLI (its own process, as another client would). */
function holds(ref: string): boolean {
  const r = spawnSync(process.execPath, [MAIN, "--workspace", WS, "inspect", ref, "--json"], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_LOG: "error", CAIRN_CONFIG: CONFIG },
  });
  return r.status === 0;
}

function changes(): { actor: string; role: string; operation: string; ref: string | null; artifact_id: string }[] {
  const r = spawnSync(process.execPath, [MAIN, "--workspace", WS, "changes", "--limit", "100", "--json"], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_LOG: "error", CAIRN_CONFIG: CONFIG },
  });
  if (r.status !== 0) throw new Error(r.stdout + r.stderr);
  return JSON.parse(r.stdout).events;
}

describe("without the flag", () => {
  it.each([
    ["cairn ui", ["ui", "--port", "0"], {} as Record<string, string>],
    ["serve --ui", ["serve", "--transport", "http", "--port", "0", "--ui"], {}],
  ])(
    "%s answers an action's POST with 405, shows no control that changes anything, and has no confirmation page",
    async (_what, args, env) => {
      const v = await view(args, env);
      const token = v.signInUrl === undefined ? WRITER : (new URL(v.signInUrl).searchParams.get("token") as string);
      const r = await post(
        v,
        "/actions/delete",
        { ...own(v), ...as(token), "Content-Type": FORM },
        encode({ ref: "notes/plan", expected_version: "2", csrf: "x" }),
      );
      expect(r.status).toBe(405);
      expect(r.headers.allow).toBe("GET, HEAD");
      const page = await get(v, "/artifact/notes/plan", as(token));
      expect(page.status).toBe(200);
      expect(page.body).not.toContain("Changes</h2>");
      expect(page.body).not.toMatch(/method="post"|\/confirm\//);
      const confirm = await get(v, "/confirm/delete/notes/plan", as(token));
      expect(confirm.status).toBe(404);
      expect(confirm.body).toContain("--allow-changes");
      expect(holds("notes/plan")).toBe(true);
      await v.stop();
    },
  );

  it("refuses --ui-allow-changes without --ui", () => {
    const r = spawnSync(
      process.execPath,
      [MAIN, "--workspace", WS, "serve", "--transport", "http", "--ui-allow-changes"],
      { encoding: "utf8", env: { ...process.env, ...TOKENS, CAIRN_CONFIG: CONFIG } },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--ui-allow-changes needs --ui");
  });
});

describe("serve --transport http --ui --ui-allow-changes", () => {
  let v: RunningView;
  beforeAll(async () => {
    v = await view(["serve", "--transport", "http", "--port", "0", "--ui", "--ui-allow-changes"]);
  });

  it("says on start that the view may delete and approve", () => {
    expect(v.stderr()).toContain("it may delete (writers) and approve (approvers)");
    for (const token of Object.values(TOKENS)) expect(v.stderr()).not.toContain(token);
  });

  it("shows each identity the buttons its role allows, and says in words what it may not", async () => {
    const reader = await get(v, "/artifact/notes/plan", as(READER));
    expect(reader.body).toContain(
      "You act as <strong>rita</strong> (reader): deleting needs the writer role; approving needs the approver role.",
    );
    expect(reader.body).not.toContain("/confirm/");
    const writer = await get(v, "/artifact/notes/plan?v=1", as(WRITER));
    expect(writer.body).toContain('<a class="button danger" href="/confirm/delete/notes/plan?v=1">Delete v1…</a>');
    expect(writer.body).toContain('<a class="button danger" href="/confirm/delete/notes/plan">Delete notes/plan…</a>');
    expect(writer.body).toContain("approving needs the approver role");
    expect(writer.body).not.toContain("/confirm/approve/");
    const approver = await get(v, "/artifact/notes/plan", as(APPROVER));
    expect(approver.body).toContain(`href="/confirm/approve/${ids["notes/plan@2"]}">Approve v2…</a>`);
    expect(approver.body).toContain("This exact version is not approved for task gates.");
  });

  it("states exactly what each confirmation will do", async () => {
    const name = await confirmation(v, "/confirm/delete/notes/plan", WRITER);
    expect(name.page.body).toContain(
      "This deletes the name <strong>notes/plan</strong> and <strong>all 2 versions</strong>, up to the current v2, as <strong>will</strong> (writer).",
    );
    expect(name.page.body).toContain(ids["notes/plan@1"]);
    expect(name.fields).toMatchObject({ ref: "notes/plan", expected_version: "2" });
    expect(name.page.body).toContain(">Delete notes/plan and all 2 versions</button>");
    const one = await confirmation(v, "/confirm/delete/notes/plan?v=1", WRITER);
    expect(one.page.body).toContain(`This deletes <strong>notes/plan v1</strong> (<code>${ids["notes/plan@1"]}</code>`);
    expect(one.fields).toMatchObject({ ref: ids["notes/plan@1"], expected_version: "2" });
    const approve = await confirmation(v, `/confirm/approve/${ids["notes/plan@2"]}`, APPROVER);
    expect(approve.page.body).toContain(
      `This approves <strong>${ids["notes/plan@2"]} (notes/plan v2)</strong> for task gates, as <strong>alice</strong> (approver).`,
    );
    expect(approve.action).toBe("/actions/approve");
    const current = await get(v, "/confirm/delete/notes/plan?v=2", as(WRITER));
    expect(current.status).toBe(400);
    expect(current.body).toContain("v2 is the current version of notes/plan");
  });

  it("lets only confirmation pages send a same-origin Referer, so a browser's POST carries its Origin", async () => {
    const confirm = await get(v, "/confirm/delete/notes/plan", as(WRITER));
    expect(confirm.headers["referrer-policy"]).toBe("same-origin");
    const artifact = await get(v, "/artifact/notes/plan", as(WRITER));
    expect(artifact.headers["referrer-policy"]).toBe("no-referrer");
  });

  it.each([
    ["no form token", (f: Record<string, string>) => ({ ref: f.ref as string, expected_version: "2" })],
    ["a wrong form token", (f: Record<string, string>) => ({ ...f, csrf: "A".repeat(43) })],
    ["a truncated form token", (f: Record<string, string>) => ({ ...f, csrf: (f.csrf as string).slice(0, 20) })],
    ["another target's token", (f: Record<string, string>) => ({ ...f, ref: "notes/keep" })],
    ["another expected_version", (f: Record<string, string>) => ({ ...f, expected_version: "1" })],
  ])("refuses %s with 403 and deletes nothing", async (_what, change) => {
    const { fields } = await confirmation(v, "/confirm/delete/notes/plan", WRITER);
    const r = await post(
      v,
      "/actions/delete",
      { ...own(v), ...as(WRITER), "Content-Type": FORM },
      encode(change(fields)),
    );
    expect(r.status).toBe(403);
    expect(r.body).toContain("nothing was changed");
    expect(holds("notes/plan")).toBe(true);
    expect(holds("notes/keep")).toBe(true);
  });

  it("refuses the form token another identity was shown", async () => {
    const { fields } = await confirmation(v, "/confirm/delete/notes/plan", APPROVER);
    const r = await post(v, "/actions/delete", { ...own(v), ...as(WRITER), "Content-Type": FORM }, encode(fields));
    expect(r.status).toBe(403);
    expect(holds("notes/plan")).toBe(true);
  });

  it.each([
    ["a cross-origin Origin", (p: number) => ({ Origin: `http://127.0.0.1:${p + 1}` })],
    ["Origin null", () => ({ Origin: "null" })],
    [
      "Sec-Fetch-Site: cross-site",
      (p: number) => ({ Origin: `http://127.0.0.1:${p}`, "Sec-Fetch-Site": "cross-site" }),
    ],
    ["Sec-Fetch-Site: same-site", () => ({ "Sec-Fetch-Site": "same-site" })],
  ])("refuses %s with 403 and deletes nothing", async (_what, headers) => {
    const { fields } = await confirmation(v, "/confirm/delete/notes/plan", WRITER);
    const r = await post(
      v,
      "/actions/delete",
      { ...host(v), ...as(WRITER), "Content-Type": FORM, ...headers(v.port) },
      encode(fields),
    );
    expect(r.status).toBe(403);
    expect(r.body).toContain("<h1>Refused</h1>");
    expect(holds("notes/plan")).toBe(true);
  });

  it("refuses a cookie-signed POST without Origin or Sec-Fetch-Site, and accepts a bearer one", async () => {
    const signIn = await get(v, `/?token=${WRITER}`, {});
    const cookie = ((signIn.headers["set-cookie"] as string[])[0] as string).split(";")[0] as string;
    const { fields } = await confirmation(v, "/confirm/delete/notes/history?v=1", WRITER);
    const bare = await post(v, "/actions/delete", { ...host(v), Cookie: cookie, "Content-Type": FORM }, encode(fields));
    expect(bare.status).toBe(403);
    expect(bare.body).toContain("without Origin or Sec-Fetch-Site");
    expect(holds(ids["notes/history@1"] as string)).toBe(true);
    const script = await post(
      v,
      "/actions/delete",
      { ...host(v), ...as(WRITER), "Content-Type": FORM },
      encode(fields),
    );
    expect(script.status).toBe(303);
    expect(holds(ids["notes/history@1"] as string)).toBe(false);
    expect(holds("notes/history")).toBe(true);
  });

  it.each(["text/plain", "application/json", "multipart/form-data; boundary=x"])(
    "answers Content-Type %s with 415 and deletes nothing",
    async (type) => {
      const { fields } = await confirmation(v, "/confirm/delete/notes/plan", WRITER);
      const r = await post(v, "/actions/delete", { ...own(v), ...as(WRITER), "Content-Type": type }, encode(fields));
      expect(r.status).toBe(415);
      expect(holds("notes/plan")).toBe(true);
    },
  );

  it("answers a body over 4 KiB with 413, declared or streamed, and deletes nothing", async () => {
    const { fields } = await confirmation(v, "/confirm/delete/notes/plan", WRITER);
    const big = `${encode(fields)}&pad=${"x".repeat(5000)}`;
    const declared = await post(v, "/actions/delete", { ...own(v), ...as(WRITER), "Content-Type": FORM }, big);
    expect(declared.status).toBe(413);
    expect(declared.headers.connection).toBe("close");
    const streamed = await post(
      v,
      "/actions/delete",
      { ...own(v), ...as(WRITER), "Content-Type": FORM, "Transfer-Encoding": "chunked" },
      big,
    );
    expect(streamed.status).toBe(413);
    expect(holds("notes/plan")).toBe(true);
  });

  it("answers a reader with 403 naming the role needed, and a writer's approval likewise", async () => {
    const { fields } = await confirmation(v, "/confirm/delete/notes/plan", WRITER);
    const reader = await post(v, "/actions/delete", { ...own(v), ...as(READER), "Content-Type": FORM }, encode(fields));
    expect(reader.status).toBe(403);
    expect(reader.body).toContain("Deleting needs the writer role; identity rita is a reader.");
    const page = await get(v, "/confirm/delete/notes/plan", as(READER));
    expect(page.status).toBe(403);
    expect(page.body).not.toContain('name="csrf"');
    const approve = await post(
      v,
      "/actions/approve",
      { ...own(v), ...as(WRITER), "Content-Type": FORM },
      encode({ ref: ids["notes/plan@2"] as string, csrf: "x" }),
    );
    expect(approve.status).toBe(403);
    expect(approve.body).toContain("Approving needs the approver role; identity will is a writer.");
    expect(holds("notes/plan")).toBe(true);
  });

  it("answers a stale expected_version with a 409 page and the next step, deleting nothing", async () => {
    const { fields } = await confirmation(v, "/confirm/delete/notes/stale", WRITER);
    const saved = spawnSync(
      process.execPath,
      [MAIN, "--workspace", WS, "save", "notes/stale", "--content", "three\n", "--expected-version", "2", "--json"],
      { encoding: "utf8", env: { ...process.env, CAIRN_LOG: "error", CAIRN_CONFIG: CONFIG } },
    );
    expect(saved.status).toBe(0);
    const r = await post(v, "/actions/delete", { ...own(v), ...as(WRITER), "Content-Type": FORM }, encode(fields));
    expect(r.status).toBe(409);
    expect(r.body).toContain("<h1>Changed since the confirmation page</h1>");
    expect(r.body).toContain("VERSION_CONFLICT");
    expect(r.body).toContain('<a href="/artifact/notes/stale">Open it again</a>');
    expect(holds("notes/stale")).toBe(true);
    expect(holds(ids["notes/stale@1"] as string)).toBe(true);
  });

  it("answers a pinned version with a 409 page naming what pins it", async () => {
    const { fields } = await confirmation(v, "/confirm/delete/data/base", WRITER);
    const r = await post(v, "/actions/delete", { ...own(v), ...as(WRITER), "Content-Type": FORM }, encode(fields));
    expect(r.status).toBe(409);
    expect(r.body).toContain("<h1>Pinned</h1>");
    expect(r.body).toContain('<a href="/artifact/data/derived?v=1">data/derived v1</a>');
    expect(holds("data/base")).toBe(true);
  });

  it("deletes a name on a browser's confirmed form: 303 to a notice only this sign-in reads; the event log names will", async () => {
    const signIn = await get(v, `/?token=${WRITER}`, {});
    const cookie = ((signIn.headers["set-cookie"] as string[])[0] as string).split(";")[0] as string;
    const page = await get(v, "/confirm/delete/notes/gone", { Cookie: cookie });
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const r = await post(
      v,
      "/actions/delete",
      { ...own(v), Cookie: cookie, "Sec-Fetch-Site": "same-origin", "Content-Type": `${FORM}; charset=UTF-8` },
      encode({ csrf, ref: "notes/gone", expected_version: "2" }),
    );
    expect(r.status).toBe(303);
    expect(r.headers.location).toMatch(/^\/done\/[A-Za-z0-9_-]+$/);
    const notice = await get(v, r.headers.location as string, { Cookie: cookie });
    expect(notice.status).toBe(200);
    expect(notice.body).toContain("Deleted notes/gone: all 2 versions (v1, v2), as will;");
    expect((await get(v, r.headers.location as string, as(APPROVER))).status).toBe(404);
    expect((await get(v, "/artifact/notes/gone", { Cookie: cookie })).status).toBe(404);
    expect(holds("notes/gone")).toBe(false);
    const again = await post(
      v,
      "/actions/delete",
      { ...own(v), Cookie: cookie, "Content-Type": FORM },
      encode({ csrf, ref: "notes/gone", expected_version: "2" }),
    );
    expect(again.status).toBe(404);
    expect(changes()).toContainEqual(
      expect.objectContaining({ actor: "will", role: "writer", operation: "delete", artifact_id: ids["notes/gone@2"] }),
    );
  });

  it("approves and revokes an exact version as alice, recorded in the event log", async () => {
    const id = ids["notes/keep@2"] as string;
    const { fields } = await confirmation(v, `/confirm/approve/${id}`, APPROVER);
    const r = await post(v, "/actions/approve", { ...own(v), ...as(APPROVER), "Content-Type": FORM }, encode(fields));
    expect(r.status).toBe(303);
    const notice = await get(v, r.headers.location as string, as(APPROVER));
    expect(notice.body).toContain(`Approved ${id} (notes/keep v2) for task gates, as alice`);
    const page = await get(v, "/artifact/notes/keep", as(APPROVER));
    expect(page.body).toContain("Approved for task gates by alice");
    const revoke = await confirmation(v, `/confirm/approve/${id}?revoke=1`, APPROVER);
    expect(revoke.fields.revoke).toBe("1");
    // The approval's token does not revoke.
    const swapped = await post(
      v,
      "/actions/approve",
      { ...own(v), ...as(APPROVER), "Content-Type": FORM },
      encode({ ...revoke.fields, csrf: fields.csrf as string }),
    );
    expect(swapped.status).toBe(403);
    const revoked = await post(
      v,
      "/actions/approve",
      { ...own(v), ...as(APPROVER), "Content-Type": FORM },
      encode(revoke.fields),
    );
    expect(revoked.status).toBe(303);
    const events = changes().filter((e) => e.artifact_id === id);
    expect(events).toContainEqual(expect.objectContaining({ actor: "alice", role: "approver", operation: "approve" }));
    expect(events).toContainEqual(
      expect.objectContaining({ actor: "alice", role: "approver", operation: "approve.revoke" }),
    );
  });
});

describe("cairn ui --allow-changes", () => {
  it("acts as the configured [identity] and says so on start", async () => {
    const v = await view(["ui", "--port", "0", "--allow-changes"]);
    expect(v.stdout()).toContain("Changes allowed (--allow-changes)");
    expect(v.stdout()).toContain("as ana (writer)");
    const token = new URL(v.signInUrl as string).searchParams.get("token") as string;
    const { page, fields } = await confirmation(v, "/confirm/delete/notes/local", token);
    expect(page.body).toContain("as <strong>ana</strong> (writer)");
    const r = await post(v, "/actions/delete", { ...own(v), ...as(token), "Content-Type": FORM }, encode(fields));
    expect(r.status).toBe(303);
    expect(holds("notes/local")).toBe(false);
    expect(changes()).toContainEqual(
      expect.objectContaining({ actor: "ana", role: "writer", operation: "delete", artifact_id: ids["notes/local@2"] }),
    );
    await v.stop();
  });
});
