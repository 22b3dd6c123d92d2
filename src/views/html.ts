// The one way the web view and the MCP Apps write markup: an `html` tagged template that escapes every interpolated
// value unless it is markup this module made, and JSON data islands. Limit: attribute values must be written in
// double quotes.

/** Markup built by `html` (its parts escaped); the only value `html` interpolates as it is. */
export class SafeHtml {
  constructor(private readonly markup: string) {}

  toString(): string {
    return this.markup;
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text made safe for an element's content or a double-quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/**
 * Markup from a template: a SafeHtml value is inserted as it is, an array as its items one after another, null,
 * undefined and false as nothing, anything else as its escaped text.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] as string;
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] as string);
  });
  return new SafeHtml(out);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.toString();
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

/** In a data island's JSON, what could end the element or open a comment, and what older JavaScript reads as a line end. */
const ISLAND_ESCAPES = /[<>&\u2028\u2029]/g;

/**
 * A value as a JSON data island: `<script type="application/json" id="…">`, which the browser never runs (so no CSP
 * allows or forbids it) and a page's script reads with `JSON.parse(element.textContent)`. `<`, `>`, `&`, U+2028 and
 * U+2029 are written as `\uXXXX` escapes, so no value can close the element (`</script>`), open a comment (`<!--`)
 * or change how the HTML parser reads what follows; JSON.parse gives back the exact value.
 */
export function jsonIsland(id: string, value: unknown): SafeHtml {
  const json = (JSON.stringify(value) ?? "null").replace(
    ISLAND_ESCAPES,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return new SafeHtml(`<script type="application/json" id="${escapeHtml(id)}">${json}</script>`);
}
