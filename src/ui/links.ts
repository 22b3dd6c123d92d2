// Every URL the web view links to, built in one place so that pages agree on paths and parameters. Names are
// percent-encoded segment by segment (a name's slashes stay path separators).

type Params = Record<string, string | number | undefined>;

function withQuery(path: string, params: Params): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") query.set(key, String(value));
  }
  const text = query.toString();
  return text === "" ? path : `${path}?${text}`;
}

function encodeName(name: string): string {
  return name.split("/").map(encodeURIComponent).join("/");
}

/** The workspace page: a namespace, a kind, a find text, a list cursor. */
export function workspaceHref(params: { ns?: string; kind?: string; q?: string; cursor?: string } = {}): string {
  return withQuery("/", params);
}

/** One artifact: its current version, or version `v`; `rows` / `offset` page its table or its text. */
export function artifactHref(
  name: string,
  params: { v?: number; rows?: number; offset?: number; before?: number } = {},
) {
  return withQuery(`/artifact/${encodeName(name)}`, params);
}

/** The line changes from version `from` to version `to` of a name. */
export function diffHref(
  name: string,
  from: number,
  to: number,
  params: { key?: readonly string[] | undefined; lines?: boolean } = {},
): string {
  return withQuery(`/diff/${encodeName(name)}`, {
    from,
    to,
    key: params.key?.join(","),
    lines: params.lines ? 1 : undefined,
  });
}

/** A version's bytes; `inline` shows an image in the page rather than saving it. */
export function downloadHref(artifactId: string, inline = false): string {
  return withQuery(`/download/${encodeURIComponent(artifactId)}`, { inline: inline ? 1 : undefined });
}

/** Path segments after a prefix, decoded; undefined when one does not decode. */
export function decodePath(rest: string): string | undefined {
  try {
    return rest.split("/").map(decodeURIComponent).join("/");
  } catch {
    return undefined;
  }
}

/** Every namespace one level below `ns` (of `kind`), a page of them at a time (1-based). */
export function namespacesHref(params: { ns?: string; kind?: string; page?: number } = {}): string {
  return withQuery("/namespaces", { ...params, page: params.page === 1 ? undefined : params.page });
}

/** Every task, with its latest run. */
export function tasksHref(): string {
  return "/tasks";
}

/** One task: its definition and its runs, newest first; `page` counts pages of runs from 1. */
export function taskHref(name: string, params: { page?: number } = {}): string {
  return withQuery(`/tasks/${encodeURIComponent(name)}`, { page: params.page === 1 ? undefined : params.page });
}

/** One run of a task, with its whole brief. */
export function taskRunHref(name: string, runId: string): string {
  return `/tasks/${encodeURIComponent(name)}/runs/${encodeURIComponent(runId)}`;
}

/** Claims: all states, or one (`held`, `expired`, `released`) paged after a resource. */
export function claimsHref(params: { state?: string; after?: string } = {}): string {
  return withQuery("/claims", params);
}

/** Recent workspace events, newest first: a changes cursor, and filters on the name (or task) and the actor. */
export function changesHref(params: { cursor?: string; name?: string; actor?: string } = {}): string {
  return withQuery("/changes", params);
}

/** The live sessions of `serve --transport http --ui`. */
export function sessionsHref(): string {
  return "/sessions";
}

/** One live session by its label (never its id); `offset` pages its handles. */
export function sessionHref(label: string, params: { offset?: number } = {}): string {
  return withQuery(`/sessions/${encodeURIComponent(label)}`, params);
}

/** The lineage graph around a name's current version, or its version `v`; `after` pages its direct dependents. */
export function lineageHref(name: string, params: { v?: number; after?: string } = {}): string {
  return withQuery(`/lineage/${encodeName(name)}`, params);
}

/** The lineage overview: stale current versions (from the `stale` cursor) and the most depended-on names. */
export function lineageOverviewHref(params: { stale?: string; offset?: number } = {}): string {
  return withQuery("/lineage", params);
}

/** Checkpoints, newest first, from a list cursor. */
export function checkpointsHref(params: { cursor?: string } = {}): string {
  return withQuery("/checkpoints", params);
}

/** The page confirming the deletion of a name (all its versions), or of its version `v` alone. */
export function confirmDeleteHref(name: string, v?: number): string {
  return withQuery(`/confirm/delete/${encodeName(name)}`, { v });
}

/** The page confirming the approval of one exact version for task gates, or the revocation of its approvals. */
export function confirmApproveHref(artifactId: string, revoke = false): string {
  return withQuery(`/confirm/approve/${encodeURIComponent(artifactId)}`, { revoke: revoke ? 1 : undefined });
}

/** Where a confirmation page's form posts. */
export function actionHref(action: "delete" | "approve"): string {
  return `/actions/${action}`;
}

/** The page showing what an action did (POST-redirect-GET). */
export function noticeHref(id: string): string {
  return `/done/${encodeURIComponent(id)}`;
}
