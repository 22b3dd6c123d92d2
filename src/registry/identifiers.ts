// Which names can be bound in snippets as `namespace.tool`, and safe identifiers derived from any name.
// Deliberately stricter than JavaScript: ASCII only, and no reserved word even where JS would allow it as a property.

// ECMAScript keywords, strict-mode and future reserved words, plus globals a binding must never shadow.
const RESERVED = new Set([
  "await",
  "break",
  "case",
  "catch",
  "class",
  "const",
  "continue",
  "debugger",
  "default",
  "delete",
  "do",
  "else",
  "enum",
  "export",
  "extends",
  "false",
  "finally",
  "for",
  "function",
  "if",
  "implements",
  "import",
  "in",
  "instanceof",
  "interface",
  "let",
  "new",
  "null",
  "package",
  "private",
  "protected",
  "public",
  "return",
  "static",
  "super",
  "switch",
  "this",
  "throw",
  "true",
  "try",
  "typeof",
  "var",
  "void",
  "while",
  "with",
  "yield",
  "arguments",
  "eval",
  "undefined",
  "NaN",
  "Infinity",
  "__proto__",
  "constructor",
  "prototype",
]);

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * True when `name` can be written as `namespace.name` in a snippet and declared as `function name(...)` in
 * TypeScript: an ASCII identifier that is not a reserved word (nor `__proto__`, `constructor`, `prototype`).
 * Any other tool stays callable as `call_tool("server.name", args)` (docs/decisions/0142-tool-bindings.md).
 */
export function isSafeIdentifier(name: string): boolean {
  return IDENTIFIER.test(name) && !RESERVED.has(name);
}

/** A safe identifier derived from any name: invalid characters become `_`, a leading digit or reserved word gets `_`. */
export function toIdentifier(name: string): string {
  const replaced = name.replace(/[^A-Za-z0-9_$]+/g, "_");
  if (replaced === "") return "_";
  return /^[0-9]/.test(replaced) || RESERVED.has(replaced) ? `_${replaced}` : replaced;
}

/**
 * PascalCase type name from any name (`get-user` -> `GetUser`, `2fa.check` -> `_2FaCheck`). A letter after digits
 * is upper-cased, as json-schema-to-typescript does, so the names Cairn refers to are the names it emits.
 */
export function toTypeName(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word !== "");
  const pascal = words
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("")
    .replace(/([0-9])([a-z])/g, (_, digit: string, letter: string) => digit + letter.toUpperCase());
  if (pascal === "") return "_";
  return /^[0-9]/.test(pascal) ? `_${pascal}` : pascal;
}
