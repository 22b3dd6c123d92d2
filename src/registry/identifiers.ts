// Which names can be written in snippets as `namespace.tool`, the identifier aliases of the others, and safe
// identifiers derived from any name. Deliberately stricter than JavaScript: ASCII only, and no reserved word even
// where JS would allow it as a property.

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
 * Any other tool is called as `namespace["name"](args)`, by its alias (`toolAliases`) or through `call_tool`
 * (docs/decisions/0142-tool-bindings.md, 0170-namespaces.md).
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

/** How a snippet writes the namespace `name`: itself when it is an identifier, else `globalThis["my-server"]`. */
export function namespaceExpression(name: string): string {
  return isSafeIdentifier(name) ? name : `globalThis[${JSON.stringify(name)}]`;
}

/**
 * The identifier alias of each tool name that is not a safe identifier (`get-sum` -> `get_sum`, `delete` ->
 * `_delete`), as a map from tool name to alias. A name gets no alias when its alias is the name of another tool of
 * the same list, or when two names would share it: an alias never hides a real tool and never picks one of two.
 */
export function toolAliases(names: Iterable<string>): Map<string, string> {
  const all = new Set(names);
  const byAlias = new Map<string, string[]>();
  for (const name of all) {
    if (isSafeIdentifier(name)) continue;
    const alias = toIdentifier(name);
    byAlias.set(alias, [...(byAlias.get(alias) ?? []), name]);
  }
  const aliases = new Map<string, string>();
  for (const [alias, owners] of byAlias) {
    if (owners.length === 1 && !all.has(alias)) aliases.set(owners[0] as string, alias);
  }
  return aliases;
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
