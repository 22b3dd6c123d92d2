// Turns a snippet (JavaScript or TypeScript, top-level await and return) into the body the executors run, and maps
// line numbers of the result back to the snippet. A snippet that is one expression returns its value.
import type { transform as Transform } from "esbuild";
import { CairnError, ErrorCode } from "../errors.js";

/** Largest snippet accepted. Code is for logic, not for carrying data: data goes through inputs or handles. */
const MAX_CODE_CHARS = 200_000;

export interface TranspiledSnippet {
  /** Script that defines `__cairn_main` and evaluates to its promise. */
  code: string;
  /** Maps a 1-based line of `code` to the 1-based line of the snippet, when the line came from the snippet. */
  originalLine(generatedLine: number): number | undefined;
}

const HEADER = "async function __cairn_main() {\n";
const EXPRESSION_HEADER = `${HEADER}return (\n`;

/** Strips TypeScript and wraps the snippet; a syntax error is a CairnError SYNTAX naming the snippet's line and column. */
export async function transpileSnippet(source: string): Promise<TranspiledSnippet> {
  if (source.length > MAX_CODE_CHARS) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `code is ${source.length} characters, over the ${MAX_CODE_CHARS} limit: pass data through inputs or a handle`,
    );
  }
  // A bare expression (`1 + 1`, `await srv.list({})`) returns its value, as in a REPL. Only when it parses as one.
  if (mayBeExpression(source)) {
    const expression = await tryTransform(`${EXPRESSION_HEADER}${source}\n);\n}`, 2, source);
    if (expression.ok) return expression.snippet;
  }
  const statements = await tryTransform(`${HEADER}${source}\n}`, 1, source);
  if (statements.ok) return statements.snippet;
  throw statements.error;
}

/**
 * False when the snippet visibly holds statements (a `return`, a declaration, a control-flow keyword at the start of a
 * line), which spares a second transform of every ordinary multi-line snippet. Anything else is tried as an expression.
 */
function mayBeExpression(source: string): boolean {
  if (/^\s*$/.test(source)) return false;
  return !/(^|[;{}\n])\s*(return|const|let|var|function|class|if|for|while|do|switch|try|throw|import|export)\b|(^|[;{}\n])\s*(interface|type|enum)\s+[A-Za-z_$]/.test(
    source,
  );
}

type Attempt = { ok: true; snippet: TranspiledSnippet } | { ok: false; error: CairnError };

let esbuild: Promise<typeof Transform> | undefined;
/** esbuild loads with the first snippet, not with the server. */
function loadTransform(): Promise<typeof Transform> {
  esbuild ??= import("esbuild").then((module) => module.transform);
  return esbuild;
}

async function tryTransform(wrapped: string, headerLines: number, source: string): Promise<Attempt> {
  const transform = await loadTransform();
  try {
    const result = await transform(wrapped, {
      loader: "ts",
      sourcemap: "external",
      sourcefile: "snippet.ts",
      target: "es2022",
      format: undefined,
      logLevel: "silent",
      supported: { "top-level-await": true },
    });
    const lines = decodeLineMap(result.map);
    return {
      ok: true,
      snippet: {
        // Appended on the last line so generated line numbers stay those of the source map.
        code: `${result.code.replace(/\n$/, "")};__cairn_main()`,
        originalLine(generatedLine) {
          const original = lines.get(generatedLine);
          if (original === undefined) return undefined;
          const line = original - headerLines;
          return line >= 1 ? line : undefined;
        },
      },
    };
  } catch (error) {
    return { ok: false, error: syntaxError(error, source, headerLines) };
  }
}

interface EsbuildMessage {
  text: string;
  location?: { line: number; column: number; lineText: string; suggestion?: string } | null;
}

/**
 * SYNTAX naming the snippet's own line and column (1-based). esbuild reports a snippet that stops short (`foo(`,
 * an open string) at the wrapper's closing brace, a line the snippet does not have: that becomes "the end of the
 * snippet", at its last character, and the wrapper's `}` is not quoted.
 */
function syntaxError(error: unknown, source: string, headerLines: number): CairnError {
  const first = (error as { errors?: EsbuildMessage[] }).errors?.[0];
  const location = first?.location;
  const text = first?.text ?? (error as Error).message;
  if (!location) {
    return new CairnError(ErrorCode.SYNTAX, `syntax error: ${text}: correct the snippet and run it again`, {
      name: "SandboxError",
    });
  }
  const lines = source.trimEnd().split("\n");
  let line = location.line - headerLines;
  let message: string;
  let column: number;
  if (line > lines.length || line < 1) {
    line = Math.max(1, lines.length);
    column = (lines[line - 1] ?? "").length + 1;
    const what = /^Unterminated/.test(text)
      ? `${text}: close it`
      : location.suggestion
        ? `"${location.suggestion}" expected: close what is still open`
        : "the code is incomplete: close every (, [, { and string it opens, and finish the last statement";
    message = `syntax error at the end of the snippet (line ${line}, column ${column}): ${what}`;
  } else {
    // esbuild counts columns in UTF-8 bytes; JavaScript and editors count characters.
    column = Buffer.from(location.lineText, "utf8").subarray(0, location.column).toString("utf8").length + 1;
    message = `syntax error at line ${line}, column ${column}: ${text}: correct the snippet there and run it again`;
  }
  return new CairnError(ErrorCode.SYNTAX, message, { name: "SandboxError", data: { line, column } });
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Decodes a source map's `mappings` into generated line -> original line (first segment of each line). */
function decodeLineMap(mapJson: string): Map<number, number> {
  const out = new Map<number, number>();
  let mappings: string;
  try {
    mappings = (JSON.parse(mapJson) as { mappings: string }).mappings;
  } catch {
    return out;
  }
  let sourceLine = 0;
  const lines = mappings.split(";");
  for (let g = 0; g < lines.length; g++) {
    const segments = (lines[g] as string).split(",");
    let first = true;
    for (const segment of segments) {
      if (segment === "") continue;
      const fields = decodeVlq(segment);
      if (fields.length >= 4) {
        sourceLine += fields[2] as number;
        if (first) {
          out.set(g + 1, sourceLine + 1);
          first = false;
        }
      }
    }
  }
  return out;
}

function decodeVlq(segment: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = BASE64.indexOf(char);
    if (digit < 0) break;
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      const negative = value & 1;
      value >>>= 1;
      values.push(negative ? -value : value);
      value = 0;
      shift = 0;
    }
  }
  return values;
}
