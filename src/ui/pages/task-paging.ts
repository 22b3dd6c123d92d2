// What the task pages share: the `page` parameter (a whole number from 1, bounded), the answer for a page past the
// last one, and a definition's objective read from the ledger's JSON.
import type { StoredDefinition } from "../../tasks/definition.js";
import { html } from "../../views/html.js";
import { errorPage } from "../layout.js";
import type { UiReply } from "../route.js";

/** The highest page number any task page accepts (its lists are read from the newest, so a page costs its depth). */
export const MAX_PAGE = 100;

/** `page` as a number from 1 to MAX_PAGE; absent: 1. Anything else is a 400 page linking the first page. */
export function pageNumber(param: string | undefined, firstHref: string): number | UiReply {
  if (param === undefined) return 1;
  const page = /^\d{1,4}$/.test(param) ? Number(param) : Number.NaN;
  if (page >= 1 && page <= MAX_PAGE) return page;
  return badRequest(`page must be a whole number from 1 to ${MAX_PAGE}, got “${param.slice(0, 40)}”`, firstHref);
}

/** A 400 page for a parameter no link of the view makes, linking the page's plain form. */
export function badRequest(message: string, href: string): UiReply {
  return errorPage(
    400,
    "Bad request",
    message,
    html`<p><a href="${href}">Open the page without it</a> and follow its links, which are always well formed.</p>`,
  );
}

/** The 404 page for a page number past the last one, linking the first page. */
export function pastLastPage(what: string, page: number, pages: number, firstHref: string): UiReply {
  return errorPage(
    404,
    "No such page",
    `There ${what.startsWith("1 ") ? "is" : "are"} ${what}: page ${page} is past the last page (${pages}).`,
    html`<p><a href="${firstHref}">Go to the first page</a>.</p>`,
  );
}

/** A stored definition's objective; "" when the JSON holds none. */
export function taskObjective(definition: unknown): string {
  const objective = (definition as Partial<StoredDefinition> | null)?.objective;
  return typeof objective === "string" ? objective : "";
}
