// Token counting with OpenAI's o200k_base encoding (gpt-tokenizer, offline): what a model reads or writes, measured on
// the exact text. Other models tokenize differently; o200k_base is one public yardstick, not every host's bill.
// Loaded with the module, for the demo's accounting; max_tokens counts through encoding.ts, which loads on first use.
import { countTokens as countO200k } from "gpt-tokenizer/encoding/o200k_base";

// Text from tools may contain strings like "<|endoftext|>": an API tokenizes them as plain text, so does this count.
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/** Tokens of `text` in o200k_base; special-token spellings count as ordinary text. */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  return countO200k(text, AS_PLAIN_TEXT);
}

/** Tokens of a tool call the model writes: the tool's name and its arguments as JSON. */
export function requestTokens(tool: string, args: unknown): number {
  return countTokens(tool) + countTokens(JSON.stringify(args ?? {}));
}

/** Tokens of the tool definitions a host loads into the model's context (the `tools/list` result as JSON). */
export function toolListTokens(tools: readonly unknown[]): number {
  return countTokens(JSON.stringify(tools));
}
