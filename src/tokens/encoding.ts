// The encodings max_tokens counts with: gpt-tokenizer's o200k_base and cl100k_base, offline. Each is loaded on first
// use (about 0.2 s and tens of MB of ranks), so `cairn --help`, start-up and calls without max_tokens never pay for it.
import type { OutputConfig } from "../config/schema.js";
import { CairnError, ErrorCode } from "../errors.js";

export type TokenEncoding = OutputConfig["tokenizer"];

/** Counts tokens of text in one encoding; special-token spellings (`<|endoftext|>`) count as ordinary text. */
export interface TokenCounter {
  readonly encoding: TokenEncoding;
  count(text: string): number;
  /** Whether `text` is at most `limit` tokens; stops counting past the limit. */
  within(text: string, limit: number): boolean;
}

interface Encoder {
  countTokens(text: string, options: typeof AS_PLAIN_TEXT): number;
  isWithinTokenLimit(text: string, limit: number, options: typeof AS_PLAIN_TEXT): false | number;
}

// A model's API tokenizes tool text such as "<|endoftext|>" as plain text; so does this count.
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

const loaded = new Map<TokenEncoding, Promise<TokenCounter>>();

/** The counter of `encoding`, its module loaded once per process on the first call. */
export function loadTokenCounter(encoding: TokenEncoding): Promise<TokenCounter> {
  let counter = loaded.get(encoding);
  if (counter === undefined) {
    counter = importEncoder(encoding).then((encoder) => ({
      encoding,
      count: (text) => (text.length === 0 ? 0 : encoder.countTokens(text, AS_PLAIN_TEXT)),
      within: (text, limit) => encoder.isWithinTokenLimit(text, limit, AS_PLAIN_TEXT) !== false,
    }));
    // A failed load is tried again on the next call rather than remembered.
    counter.catch(() => loaded.delete(encoding));
    loaded.set(encoding, counter);
  }
  return counter;
}

async function importEncoder(encoding: TokenEncoding): Promise<Encoder> {
  try {
    // One literal specifier each, so the bundle-free build and the import-rules test see every lazy import.
    return encoding === "cl100k_base"
      ? await import("gpt-tokenizer/encoding/cl100k_base")
      : await import("gpt-tokenizer/encoding/o200k_base");
  } catch (error) {
    throw new CairnError(
      ErrorCode.INTERNAL,
      `the ${encoding} tokenizer could not be loaded (${(error as Error).message}): reinstall Cairn's dependencies (npm ci)`,
      { cause: error },
    );
  }
}
