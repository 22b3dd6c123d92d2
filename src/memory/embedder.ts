// Local embeddings for hybrid recall, loaded from `[memory] model_dir` and never downloaded. The one embedder shipped
// is a deterministic hashing embedder (character trigrams and words folded into a fixed vector): it matches spelling
// variants and shared stems, not meaning. A semantic model plugs in behind the same `Embedder` contract.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { CairnError, ErrorCode } from "../errors.js";

/** Turns texts into unit vectors of one dimension; cosine similarity is their dot product. */
export interface Embedder {
  /** What `session_status` and recall report (`hashing-256`). */
  readonly name: string;
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

/** The file in model_dir that names the embedder and its parameters. */
export const EMBEDDER_FILE = "embedder.json";

/**
 * The embedder `dir` provisions: `embedder.json` holding `{"kind": "hashing", "dimensions": N}`. CONFIG_INVALID when
 * the file is missing or names a kind this build cannot run.
 */
export async function loadEmbedder(dir: string): Promise<Embedder> {
  const path = join(dir, EMBEDDER_FILE);
  let spec: unknown;
  try {
    spec = JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `[memory] model_dir: cannot read ${path} (${error instanceof Error ? error.message : String(error)}): provision the model there, or remove model_dir for keyword recall`,
    );
  }
  const { kind, dimensions } = (spec ?? {}) as { kind?: unknown; dimensions?: unknown };
  if (kind !== "hashing") {
    throw new CairnError(
      ErrorCode.CONFIG_INVALID,
      `[memory] model_dir: ${path} names kind ${JSON.stringify(kind)}; this build runs "hashing" only: fix the file or remove model_dir`,
    );
  }
  const size = dimensions ?? 256;
  if (typeof size !== "number" || !Number.isInteger(size) || size < 16 || size > 4096) {
    throw new CairnError(ErrorCode.CONFIG_INVALID, `[memory] model_dir: ${path}: dimensions must be 16-4096`);
  }
  return new HashingEmbedder(size);
}

/** Deterministic: the same text gives the same vector in every process. */
export class HashingEmbedder implements Embedder {
  readonly name: string;

  constructor(private readonly dimensions: number) {
    this.name = `hashing-${dimensions}`;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.vector(text));
  }

  private vector(text: string): Float32Array {
    const vector = new Float32Array(this.dimensions);
    for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
      this.add(vector, `w:${word}`, 2);
      const padded = ` ${word} `;
      for (let i = 0; i + 3 <= padded.length; i++) this.add(vector, padded.slice(i, i + 3), 1);
    }
    let norm = 0;
    for (const value of vector) norm += value * value;
    norm = Math.sqrt(norm);
    if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) / norm;
    return vector;
  }

  private add(vector: Float32Array, feature: string, weight: number): void {
    // FNV-1a: a stable hash; its top bit gives the sign, so unrelated features cancel rather than pile up.
    let hash = 0x811c9dc5;
    for (let i = 0; i < feature.length; i++) {
      hash ^= feature.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    const index = (hash >>> 1) % this.dimensions;
    vector[index] = (vector[index] as number) + (hash & 1 ? weight : -weight);
  }
}

/** Dot product of two unit vectors of one dimension. */
export function cosine(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
}
