// The searchable catalog of capabilities: exact lookup by canonical name, ranked keyword search, "did you mean".
// Search is BM25 over name words, description and parameter names (minisearch); no embeddings, so synonyms miss.
import { distance } from "fastest-levenshtein";
import MiniSearch from "minisearch";
import type { Capability } from "./capability.js";
import { normalizeTerm, splitWords, tokenize } from "./tokenize.js";

export interface SearchHit {
  name: string;
  description: string;
  /** Relevance, higher is better; only comparable within one search. */
  score: number;
}

/**
 * The capabilities one Cairn process can call.
 * - Names are unique: `add` replaces a capability of the same name.
 * - `get` resolves a canonical name, else an alias (`server.get_sum` for `server.get-sum`, see Capability.alias).
 * - Hidden capabilities are returned by `get` and `suggest` but never by `list` or `search`.
 * - `search` ranks by keyword relevance; an exact canonical name always comes first.
 */
export interface CapabilityRegistry {
  add(capability: Capability): void;
  /** Replaces every capability of `server` by `capabilities` (an upstream's new tool list). */
  replaceServer(server: string, capabilities: Capability[]): void;
  remove(name: string): void;
  /** The capability named `name`, or whose alias it is. */
  get(name: string): Capability | undefined;
  /** Visible capabilities, sorted by name. */
  list(): Capability[];
  /** Up to `limit` visible capabilities matching `query`, best first. @default limit 10 */
  search(query: string, limit?: number): SearchHit[];
  /** Up to `limit` canonical names close to a mistyped `name`, best first (hidden ones included). @default 3 */
  suggest(name: string, limit?: number): string[];
  readonly size: number;
}

interface IndexedDocument {
  id: string;
  name: string;
  description: string;
  params: string;
}

const MAX_LIMIT = 100;
const MAX_QUERY_WORDS = 32;
const MAX_SUGGEST_CHARS = 300;

export function createCapabilityRegistry(initial: Capability[] = []): CapabilityRegistry {
  const capabilities = new Map<string, Capability>();
  // Precomputed for suggest(), which compares a name with every capability.
  const spellings = new Map<string, { name: string; tool: string | undefined; tokens: Set<string> }>();
  const indexed = new Map<string, IndexedDocument>();
  // `server.alias` -> canonical name, for the capabilities that have an alias.
  const aliases = new Map<string, string>();
  const aliasOf = (capability: Capability) =>
    capability.alias !== undefined && capability.server !== undefined
      ? `${capability.server}.${capability.alias}`
      : undefined;
  // The search index is built on the first search, not with the registry: reading every capability's parameter names
  // means converting every built-in's schema, which `cairn serve` should not pay before its first answer.
  let index: MiniSearch<IndexedDocument> | undefined;
  const indexDocument = (target: MiniSearch<IndexedDocument>, capability: Capability) => {
    const document: IndexedDocument = {
      id: capability.name,
      name: capability.name,
      description: capability.description,
      params: parameterNames(capability.inputSchema).join(" "),
    };
    target.add(document);
    indexed.set(capability.name, document);
  };
  const searchIndex = (): MiniSearch<IndexedDocument> => {
    if (index !== undefined) return index;
    const built = new MiniSearch<IndexedDocument>({
      fields: ["name", "description", "params"],
      tokenize: splitWords,
      processTerm: normalizeTerm,
      searchOptions: {
        boost: { name: 3, params: 1.2, description: 1 },
        prefix: (term) => term.length >= 3,
        // Edit distance 1 from 4 letters, 2 from 5: a swapped pair of letters costs 2 in Levenshtein.
        fuzzy: (term) => (term.length >= 5 ? 2 : term.length >= 4 ? 1 : false),
        combineWith: "OR",
      },
    });
    for (const capability of capabilities.values()) if (!capability.hidden) indexDocument(built, capability);
    index = built;
    return built;
  };

  const unindex = (name: string) => {
    const document = indexed.get(name);
    if (!document || index === undefined) return;
    index.remove(document);
    indexed.delete(name);
  };

  const add = (capability: Capability) => {
    remove(capability.name);
    capabilities.set(capability.name, capability);
    const alias = aliasOf(capability);
    if (alias !== undefined) aliases.set(alias, capability.name);
    spellings.set(capability.name, {
      name: capability.name.toLowerCase(),
      tool: capability.tool?.toLowerCase(),
      tokens: new Set(tokenize(capability.name)),
    });
    if (!capability.hidden && index !== undefined) indexDocument(index, capability);
  };

  function remove(name: string): void {
    const existing = capabilities.get(name);
    if (existing === undefined) return;
    unindex(name);
    const alias = aliasOf(existing);
    if (alias !== undefined && aliases.get(alias) === name) aliases.delete(alias);
    capabilities.delete(name);
    spellings.delete(name);
  }

  for (const capability of initial) add(capability);

  return {
    add,
    remove,
    replaceServer(server, replacements) {
      for (const capability of [...capabilities.values()]) {
        if (capability.server === server) remove(capability.name);
      }
      for (const capability of replacements) add(capability);
    },
    get(name) {
      const exact = capabilities.get(name);
      if (exact) return exact;
      const canonical = aliases.get(name);
      return canonical === undefined ? undefined : capabilities.get(canonical);
    },
    list: () => [...capabilities.values()].filter((c) => !c.hidden).sort((a, b) => a.name.localeCompare(b.name)),
    get size() {
      return capabilities.size;
    },

    search(query, limit = 10) {
      const wanted = Math.max(1, Math.min(MAX_LIMIT, Math.floor(limit)));
      const trimmed = query.trim();
      if (trimmed === "") return [];
      const hits: SearchHit[] = [];
      const exact = capabilities.get(trimmed);
      if (exact && !exact.hidden) hits.push({ name: exact.name, description: exact.description, score: Infinity });
      // A pasted paragraph must not cost a fuzzy pass per word: the first words carry the intent.
      const words = splitWords(trimmed).slice(0, MAX_QUERY_WORDS).join(" ");
      for (const result of searchIndex().search(words)) {
        if (hits.length >= wanted) break;
        if (result.id === exact?.name) continue;
        const capability = capabilities.get(result.id as string);
        if (capability) hits.push({ name: capability.name, description: capability.description, score: result.score });
      }
      return hits.slice(0, wanted);
    },

    suggest(name, limit = 3) {
      const wanted = name.trim().toLowerCase();
      // Edit distance costs the product of the lengths, for every capability: a giant name gets no suggestion.
      if (wanted === "" || wanted.length > MAX_SUGGEST_CHARS) return [];
      const wantedTokens = new Set(tokenize(wanted));
      const dot = wanted.indexOf(".");
      const wantedServer = dot > 0 ? wanted.slice(0, dot + 1) : undefined;
      const scored: { name: string; score: number }[] = [];
      for (const [name, spelling] of spellings) {
        // Within the same namespace only the tool part is compared: a shared "cli." must not make rm look like jq.
        // A bare tool name ("list_issues") is compared with the tool part, so the missing namespace costs nothing.
        const sameServer =
          wantedServer !== undefined && spelling.tool !== undefined && spelling.name.startsWith(wantedServer);
        const editScore = sameServer
          ? similarity(wanted.slice(dot + 1), spelling.tool as string)
          : Math.max(
              similarity(wanted, spelling.name),
              spelling.tool === undefined ? 0 : similarity(wanted, spelling.tool),
            );
        const overlap = jaccard(wantedTokens, spelling.tokens);
        const score = Math.max(editScore, 0.5 * editScore + 0.5 * overlap);
        if (score >= 0.5) scored.push({ name, score });
      }
      scored.sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
      return scored.slice(0, Math.max(0, limit)).map((s) => s.name);
    },
  };
}

/** Property names of an input schema, nested objects and array items included (`filter`, `ids`, `olderThan`). */
function parameterNames(schema: unknown, depth = 0, names: string[] = []): string[] {
  if (depth > 4 || schema === null || typeof schema !== "object") return names;
  const node = schema as Record<string, unknown>;
  const properties = node.properties;
  if (properties !== null && typeof properties === "object") {
    for (const [key, value] of Object.entries(properties)) {
      names.push(key);
      parameterNames(value, depth + 1, names);
    }
  }
  if (node.items !== undefined) parameterNames(node.items, depth + 1, names);
  for (const keyword of ["anyOf", "oneOf", "allOf"]) {
    const variants = node[keyword];
    if (Array.isArray(variants)) for (const variant of variants) parameterNames(variant, depth + 1, names);
  }
  return names;
}

function similarity(a: string, b: string): number {
  const longest = Math.max(a.length, b.length);
  return longest === 0 ? 1 : 1 - distance(a, b) / longest;
}

function jaccard(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let shared = 0;
  for (const token of a) if (b.has(token)) shared++;
  return shared / (a.size + b.size - shared);
}
