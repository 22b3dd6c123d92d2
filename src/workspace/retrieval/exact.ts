// Exact identifiers in a query: BM25 folds case and scores words one by one, so for "enum ModuleResolutionKind" a
// short chunk that only mentions the name outranks the declaration. Chunks that hold the query's identifiers exactly
// (case and all) are put first: the query's words in order, then a declaration of the name, then every identifier.
// Only for queries naming an identifier (camelCase, snake_case, a dotted path...); prose keeps BM25's order.

/** Words a declaration of a name starts with, in the languages a workspace commonly holds. */
const DECLARES =
  "enum|interface|class|type|function|const|let|var|namespace|module|struct|trait|impl|def|fn|func|record|object";

/** A token of code: letters, digits, `_` and `$`, dotted paths kept whole. */
const TOKEN = /[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*/g;

/** Whether `token` reads as an identifier, not an English word: an inner capital, `_`, `$`, a dot or a digit. */
function isIdentifier(token: string): boolean {
  return /[a-z0-9][A-Z]|[A-Z]{2,}[a-z]|[_$.]|[A-Za-z]\d/.test(token);
}

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A case-sensitive match of `token` standing alone (not inside a longer identifier). */
function whole(token: string): string {
  return `(?<![\\w$])${literal(token)}(?![\\w$])`;
}

export interface ExactMatcher {
  /** 3: the query's words in order; 2: a declaration of one of its identifiers; 1: all its identifiers; else 0. */
  tier(text: string): number;
}

/** The matcher for `query`, or undefined when it names no identifier (then ranking stays BM25's). */
export function exactMatcher(query: string): ExactMatcher | undefined {
  const tokens = query.match(TOKEN) ?? [];
  const identifiers = [...new Set(tokens.filter(isIdentifier))].slice(0, 8);
  if (identifiers.length === 0) return undefined;
  const phrase = tokens.length > 1 ? new RegExp(tokens.slice(0, 16).map(whole).join("[^\\w$]+")) : undefined;
  const declared = new RegExp(`(?<![\\w$])(?:${DECLARES})\\s+(?:${identifiers.map(whole).join("|")})`);
  const each = identifiers.map((id) => new RegExp(whole(id)));
  return {
    tier(text) {
      if (phrase?.test(text)) return 3;
      if (declared.test(text)) return 2;
      return each.every((re) => re.test(text)) ? 1 : 0;
    },
  };
}

/** `items` with the higher exact tiers first, each tier in the order given. */
export function exactFirst<T>(items: readonly T[], matcher: ExactMatcher, text: (item: T) => string): T[] {
  return items
    .map((item, rank) => ({ item, rank, tier: matcher.tier(text(item)) }))
    .sort((a, b) => b.tier - a.tier || a.rank - b.rank)
    .map((r) => r.item);
}
