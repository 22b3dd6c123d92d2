// Turns a snippet (JavaScript or TypeScript, top-level await and return) into the body the executors run, and maps
// line numbers of the result back to the snippet. A snippet that is one expression returns its value.
import { transform } from "esbuild";
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

/** Strips TypeScript and wraps the snippet; a syntax error is a CairnError SYNTAX naming the snippet's line. */
export async function transpileSnippet(source: string): Promise<TranspiledSnippet> {
  if (source.length > MAX_CODE_CHARS) {
    throw new CairnError(
      ErrorCode.INVALID_ARGUMENT,
      `code is ${source.length} characters, over the ${MAX_CODE_CHARS} limit: pass data through inputs or a handle`,
    );
  }
  // A bare expression (`1 + 1`, `await srv.list({})`) returns its value, as in a REPL. Only when it parses as one.
  if (mayBeExpression(source)) {
    const expression = await tryTransform(`${EXPRESSION_HEADER}${source}\n);\n}`, 2);
    if (expression.ok) return expression.snippet;
  }
  const statements = await tryTransform(`${HEADER}${source}\n}`, 1);
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

async function tryTransform(wrapped: string, headerLines: number): Promise<Attempt> {
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
    const first = (error as { errors?: { text: string; location?: { line: number; column: number } | null }[] })
      .errors?.[0];
    const line = first?.location ? Math.max(1, first.location.line - headerLines) : undefined;
    const where = line === undefined ? "" : ` (line ${line})`;
    return {
      ok: false,
      error: new CairnError(ErrorCode.SYNTAX, `syntax error${where}: ${first?.text ?? (error as Error).message}`, {
        name: "SandboxError",
        data: line === undefined ? undefined : { line },
      }),
    };
  }
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
