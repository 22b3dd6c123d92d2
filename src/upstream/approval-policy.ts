// Which upstream calls wait for a person: a server's `approve` patterns and `approve_destructive` over the tool's MCP
// annotations. Pure and table-tested; the gate (approvals.ts) asks it before every call a snippet makes.

/** What the policy reads of one server's configuration (`[servers.NAME]`). */
export interface ApprovalRules {
  /** @default [] */
  approve?: readonly string[] | undefined;
  /** @default false */
  approve_destructive?: boolean | undefined;
}

/** The MCP annotations of a tool as its server lists them; absent when it lists none. */
export interface ToolHints {
  readOnlyHint?: boolean | undefined;
  destructiveHint?: boolean | undefined;
}

/**
 * Why a call of `tool` needs approval, or undefined when it does not. A pattern of `approve` matching the name wins
 * (it names itself in the reason); else `approve_destructive` asks for every tool that may destroy: MCP says a tool
 * without `readOnlyHint: true` may write, and one without `destructiveHint: false` may destroy, so a tool the server
 * did not annotate counts as destructive (a careful user expects an unknown tool to be asked about, not trusted).
 */
export function approvalReason(rules: ApprovalRules, tool: string, hints: ToolHints | undefined): string | undefined {
  const pattern = (rules.approve ?? []).find((p) => globMatches(p, tool));
  if (pattern !== undefined) return pattern === tool ? `approve = ["${tool}"]` : `approve pattern "${pattern}"`;
  if (rules.approve_destructive !== true) return undefined;
  if (hints?.readOnlyHint === true) return undefined;
  if (hints?.destructiveHint === false) return undefined;
  return hints?.destructiveHint === true
    ? "approve_destructive (the tool is marked destructiveHint)"
    : "approve_destructive (the tool has no annotations saying it is safe, so MCP counts it as destructive)";
}

/**
 * A glob over a whole tool name: `*` any run of characters (none included), `?` exactly one, everything else itself
 * (case-sensitive, as tool names are). Linear in the name's length times the pattern's: no backtracking regex.
 */
export function globMatches(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    const c = pattern[p];
    if (c === "?" || (c !== undefined && c !== "*" && c === name[n])) {
      p++;
      n++;
    } else if (c === "*") {
      star = p++;
      resume = n;
    } else if (star >= 0) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}
