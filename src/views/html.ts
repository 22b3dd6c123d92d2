// The one way the web view and the MCP Apps write markup: an `html` tagged template that escapes every interpolated
// value unless it is markup this module made. Limit: attribute values must be written in double quotes.

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
