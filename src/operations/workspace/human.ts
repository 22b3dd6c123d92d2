// How the command line prints a version in its short human summaries.

/** `name vN (ws_..., kind, N bytes)`. */
export function describeVersion(m: {
  name: string;
  version: number;
  artifact_id: string;
  kind: string;
  bytes: number;
}): string {
  return `${m.name} v${m.version} (${m.artifact_id}, ${m.kind}, ${m.bytes} bytes)`;
}

/** What changed between two table versions, in one line: `4 changed, 0 added, 1 removed since v2 (by store)`. */
export function describeRowChanges(c: {
  since?: { version: number } | undefined;
  unavailable?: string | undefined;
  by?: "key" | "rows" | undefined;
  key?: string[] | undefined;
  key_unusable?: string | undefined;
  added?: number | undefined;
  removed?: number | undefined;
  changed?: number | undefined;
}): string {
  const since = c.since === undefined ? "" : ` since v${c.since.version}`;
  if (c.unavailable !== undefined) return `changes${since} unknown (${c.unavailable})`;
  const counts = [
    ...(c.changed === undefined ? [] : [`${c.changed} changed`]),
    `${c.added ?? 0} added`,
    `${c.removed ?? 0} removed`,
  ].join(", ");
  const by =
    c.by === "key"
      ? ` (by ${(c.key ?? []).join(", ")})`
      : ` (whole rows${c.key_unusable ? `: ${c.key_unusable}` : ""})`;
  return `${counts}${since}${by}`;
}

/** Each row of a row comparison as `~ {key} before -> after`, `- row` or `+ row`, one a line. */
export function describeChangedRows(
  rows: readonly { change: string; key?: unknown; before?: unknown; after?: unknown }[],
): string[] {
  return rows.map((r) =>
    r.change === "changed"
      ? `~ ${JSON.stringify(r.key)} ${JSON.stringify(r.before)} -> ${JSON.stringify(r.after)}`
      : r.change === "removed"
        ? `- ${JSON.stringify(r.before)}`
        : `+ ${JSON.stringify(r.after)}`,
  );
}
