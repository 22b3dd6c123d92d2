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
