// resume: the handoff a checkpoint leaves: found by name, id, namespace or search (the latest when nothing is named),
// with a short preview of each version it pins: a table's first rows and row count through the query engine (when
// the caller hands one over), text's first bytes; one damaged version is reported in place, never hides the rest.
import { CairnError, toCairnError } from "../errors.js";
import { isTextMediaType } from "../media-type.js";
import type { BlobStore } from "./blobs/blob-store.js";
import { type Catalog, isArtifactId, type VersionRecord } from "./catalog/catalog.js";
import { fitPreviews, pageOf } from "./excerpt-fit.js";
import { compactMetadata } from "./metadata.js";
import { fitList, type Omitted, type ReplyBudget } from "./retrieval/budget.js";
import { textPage } from "./text-page.js";
import type { ArtifactPreview, Excerpt, ResumeInput, ResumeResult, TablePreview } from "./types.js";
import { checkObject, checkText, isValidName, MAX_QUERY_TEXT_CHARS, requireFound } from "./validate.js";
import { VersionReader } from "./version-reader.js";

/** Bytes of each pinned version's text a resume shows. */
const PREVIEW_BYTES = 512;
/** Rows of each pinned table a resume shows (fewer, the same number for every table, when the budget is short). */
export const PREVIEW_ROWS = 5;

/** The first rows and the row count of one exact version, through the query engine (WorkspaceSql.peek). */
export type TableReader = (artifactId: string, rows: number) => Promise<TablePreview>;

type Stores = {
  catalog: Catalog;
  blobs: BlobStore;
  /** Without it (the workspace alone, the resume prompt) tables are previewed as their bytes. */
  tables?: TableReader | undefined;
};

/** The checkpoint `input.text` names (or the latest), with previews of what it pins; candidates when several match. */
export async function resumeCheckpoint(
  stores: Stores,
  input: ResumeInput = {},
  budget?: ReplyBudget,
): Promise<ResumeResult> {
  const reply = await resumeReply(stores, input);
  if ("candidates" in reply) {
    return fitList(reply, "candidates", budget, "resume one by name or id, or raise max_tokens to see them");
  }
  const build = (artifacts: ArtifactPreview[], omitted: Omitted | undefined) =>
    omitted === undefined ? { ...reply, artifacts } : { ...reply, artifacts, omitted };
  return fitPreviews(reply.artifacts, build, budget);
}

async function resumeReply(stores: Stores, input: ResumeInput): Promise<ResumeResult> {
  const args = checkObject("resume", input);
  const text = checkText("text", args.text, MAX_QUERY_TEXT_CHARS)?.trim() ?? "";
  if (text === "") return resumeLatest(stores);
  const exact = isArtifactId(text) || isValidName(text) ? (await stores.catalog.get([text]))[0] : undefined;
  if (exact?.kind === "checkpoint") return resumed(stores, exact);
  const prefix = text.replace(/\/+$/, "");
  const under = isValidName(prefix) ? await stores.catalog.checkpointsUnder(prefix) : [];
  if (under.length === 1) return resumed(stores, under[0] as VersionRecord);
  const candidates =
    under.length > 0
      ? under
      : (await stores.catalog.search(text, { limit: 10, kind: "checkpoint" })).map((h) => h.record);
  const notCheckpoint = exact === undefined ? "" : `"${text}" is a ${exact.kind}, not a checkpoint. `;
  if (under.length === 0 && candidates.length === 1) {
    return resumed(stores, candidates[0] as VersionRecord, `${notCheckpoint}The only checkpoint matching "${text}".`);
  }
  return {
    candidates: candidates.map((r) => ({
      artifact_id: r.artifact_id,
      name: r.name,
      version: r.version,
      created_at: r.created_at,
      summary: r.summary,
      objective: r.checkpoint?.objective ?? null,
    })),
    message:
      candidates.length === 0
        ? `${notCheckpoint}No checkpoint matches "${text}": use find to look for it`
        : `${notCheckpoint}${candidates.length} checkpoints match "${text}": resume one by name or id`,
  };
}

async function resumeLatest(stores: Stores): Promise<ResumeResult> {
  const { records, overview } = await stores.catalog.list({
    kind: "checkpoint",
    limit: 1,
    overview: { namespaces: 0 },
  });
  const latest = records[0];
  if (latest === undefined) {
    return {
      candidates: [],
      message:
        "No checkpoint is saved in this workspace yet: save one with a checkpoint {objective, verified, next_step, notes}",
    };
  }
  const total = overview?.total ?? 1;
  return resumed(
    stores,
    latest,
    total > 1 ? `The most recent of ${total} checkpoints; list with kind "checkpoint" shows the others.` : undefined,
  );
}

async function resumed(stores: Stores, record: VersionRecord, note?: string): Promise<ResumeResult> {
  const pinned = requireFound(record.dependencies, await stores.catalog.get(record.dependencies));
  const reader = new VersionReader(stores.blobs);
  const artifacts: ArtifactPreview[] = [];
  for (const dep of pinned) {
    const entry = { ...compactMetadata(dep), summary: dep.summary };
    let unreadable: string | undefined;
    if (stores.tables !== undefined && isTable(dep)) {
      try {
        artifacts.push({ ...entry, table: await stores.tables(dep.artifact_id, PREVIEW_ROWS) });
        continue;
      } catch (error) {
        const reason = toCairnError(error);
        // A CSV the engine cannot parse still shows its text, with the engine's reason beside it.
        unreadable = `the query engine cannot read it as a table: ${reason.code}: ${reason.message}`;
        if (!isTextMediaType(dep.media_type)) {
          artifacts.push({ ...entry, excerpt: null, offset: 0, next_offset: null, note: unreadable });
          continue;
        }
      }
    }
    let preview: Excerpt;
    try {
      const page = await textPage(reader, dep, 0, PREVIEW_BYTES);
      preview = "bytes" in page ? pageOf(page) : page;
    } catch (error) {
      // One damaged artifact must not hide the handoff: report it in place of its preview.
      if (!(error instanceof CairnError)) throw error;
      preview = { excerpt: null, offset: 0, next_offset: null, note: `${error.code}: ${error.message}` };
    }
    if (unreadable !== undefined)
      preview.note = preview.note === undefined ? unreadable : `${unreadable}; ${preview.note}`;
    artifacts.push({ ...entry, ...preview });
  }
  const fields = record.checkpoint ?? { objective: "" };
  return {
    checkpoint: {
      artifact_id: record.artifact_id,
      name: record.name,
      version: record.version,
      created_at: record.created_at,
      summary: record.summary,
      ...fields,
      dependencies: record.dependencies,
      stale: record.stale,
      stale_inputs: record.stale_inputs,
    },
    artifacts,
    ...(note === undefined ? {} : { note }),
  };
}

/** A version the query engine previews: what query reads as CSV, Parquet or JSON by its kind. */
function isTable(record: VersionRecord): boolean {
  return record.kind === "csv" || record.kind === "parquet" || record.kind === "json";
}
