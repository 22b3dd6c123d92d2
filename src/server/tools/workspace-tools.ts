// The workspace tools of SPEC (save, find, inspect, resume, import, delete) over the shared Workspace. `from` promotes a
// session handle into the workspace host-side, so the bytes never pass through the model.
import { saveToWorkspace } from "../../codemode/promote.js";
import {
  DeleteInputSchema,
  FindInputSchema,
  ImportInputSchema,
  InspectInputSchema,
  ResumeInputSchema,
  SaveInputSchema,
} from "../../workspace/tool-schemas.js";
import type { Workspace } from "../../workspace/workspace.js";
import { defineTool, jsonReply, type ToolDefinition } from "../tool.js";

export type WorkspaceProvider = () => Promise<Workspace>;

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

export function workspaceTools(workspace: WorkspaceProvider, limits: { indexBytes: number }): ToolDefinition[] {
  return [
    defineTool({
      name: "save",
      title: "Save a versioned artifact",
      description:
        "Save a new version of a named artifact in the durable workspace (it outlives this session): text content (at most 1 MiB), a checkpoint {objective, verified?, next_step?, notes?} for the next session, or from: a res_/art_ handle of this session (up to 64 MiB, copied host-side without passing through you). " +
        "The first save of a name needs no expected_version; every later save must pass the current version (else VERSION_CONFLICT naming it). Up to 16 dependencies (ids or names) are pinned; the artifact turns stale when one is superseded. Returns the version's metadata (artifact_id ws_..., name, version, kind, bytes, sha256...).",
      inputSchema: SaveInputSchema.strict(),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      handler: async (args, ctx) => jsonReply(await saveToWorkspace(await workspace(), args, ctx.session)),
    }),
    defineTool({
      name: "find",
      title: "Search the workspace",
      description: `Full-text search (ranked) over the current versions' names, summaries, sources and the first ${limits.indexBytes} bytes of text. Returns up to limit (default 10, max 100) results with metadata, staleness and a snippet of the match.`,
      inputSchema: FindInputSchema.strict(),
      annotations: READ_ONLY,
      handler: async (args) => jsonReply(await (await workspace()).find(args)),
    }),
    defineTool({
      name: "inspect",
      title: "Inspect artifacts",
      description:
        "Metadata, staleness (stale, stale_inputs) and a page of text of one artifact (ref) or up to 16 (refs) from one consistent snapshot. excerpt_bytes 0 to 8192 (default 2048), cut on UTF-8 boundaries; pass next_offset back as offset to read the next page (null at the end). Compact by default; full: true for every field.",
      inputSchema: InspectInputSchema.strict(),
      annotations: READ_ONLY,
      handler: async (args) => jsonReply(await (await workspace()).inspect(args)),
    }),
    defineTool({
      name: "resume",
      title: "Resume a checkpoint",
      description:
        "Open a checkpoint by exact name or id, else the single checkpoint under a namespace (e.g. project), else list the candidates. Returns the checkpoint (objective, verified, next_step, notes) and a short preview of every artifact it pins.",
      inputSchema: ResumeInputSchema.strict(),
      annotations: READ_ONLY,
      handler: async (args) => jsonReply(await (await workspace()).resume(args)),
    }),
    defineTool({
      name: "import",
      title: "Import a local file",
      description:
        "Copy one local file (absolute path) into the workspace in its native format (CSV, Parquet, JSON, PDF, images, anything) as a new version of a name; streamed, so large files are fine. Later imports of the name need expected_version. Opt-in: offered only when listed in cairn serve --tools.",
      inputSchema: ImportInputSchema.strict(),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      handler: async (args) => jsonReply(await (await workspace()).import(args)),
    }),
    defineTool({
      name: "delete",
      title: "Delete versions",
      description:
        "Delete one superseded version (ref = its ws_ id) or every version of a name (ref = the name, with expected_version = its current version). Refused with PINNED, naming the blockers, while another artifact pins a version. Opt-in: offered only when listed in cairn serve --tools.",
      inputSchema: DeleteInputSchema.strict(),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      handler: async (args) => jsonReply(await (await workspace()).delete(args)),
    }),
  ];
}
