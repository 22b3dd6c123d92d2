// Promotion of session data into the durable workspace: `save` with `from: res_/art_` copies the value or bytes
// host-side, so they never pass through the model. Used by the save tool and by workspace.save in snippets.
import { CairnError, ErrorCode } from "../errors.js";
import type { Session } from "../session/session.js";
import type { SaveInput, WriteOptions } from "../workspace/types.js";
import type { Workspace } from "../workspace/workspace.js";

/** A save as callers send it: text or bytes content, a checkpoint, or `from`, a handle of the caller's session. */
export type SaveRequest = Omit<SaveInput, "content" | "sql" | "parameters" | "inputs"> & {
  content?: string | Uint8Array | undefined;
  from?: string | undefined;
};

/** Saves, resolving `from: res_/art_` into content host-side; shared by the tool and by snippets. */
export async function saveToWorkspace(
  workspace: Workspace,
  input: SaveRequest,
  session: Session,
  write: WriteOptions = {},
) {
  const { from, ...rest } = input;
  if (from === undefined) return workspace.save(rest as SaveInput, write);
  if (rest.content !== undefined || rest.checkpoint !== undefined) {
    throw new CairnError(ErrorCode.INVALID_ARGUMENT, "save takes one of content, checkpoint or from");
  }
  if (from.startsWith("res_")) {
    const json = await session.results.loadJson(from);
    return workspace.save(
      {
        ...(rest as SaveInput),
        content: Buffer.from(json, "utf8"),
        media_type: rest.media_type ?? "application/json",
        kind: rest.kind ?? "json",
        // Never the handle itself: it is the authority to the session's data, and the workspace is shared.
        source: rest.source ?? "a session result",
      },
      write,
    );
  }
  if (from.startsWith("art_")) {
    const info = await session.artifacts.info(from, { allowDisabled: true });
    // Read through the store (links never followed), then save the bytes.
    const bytes = await session.artifacts.read(from, { allowDisabled: info.lane === "spill" });
    return workspace.save(
      {
        ...(rest as SaveInput),
        content: bytes,
        media_type: rest.media_type ?? info.media_type,
        filename: rest.filename ?? info.filename,
        source: rest.source ?? "a session artifact",
      },
      write,
    );
  }
  throw new CairnError(
    ErrorCode.INVALID_ARGUMENT,
    `from must be a res_ or art_ handle of this session, not ${JSON.stringify(from.slice(0, 40))}`,
  );
}
