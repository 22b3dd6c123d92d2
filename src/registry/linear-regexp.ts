// The `pattern`s of JSON Schemas Cairn did not write (an upstream tool's input schema, a saved snippet's declaration)
// run in V8's linear-time regexp engine: in the default backtracking engine `^(a+)+$` against 40 characters blocks
// the server's event loop, every session with it, for minutes. A pattern the linear engine cannot run
// (backreferences, lookaround, \p{…}, counted repeats over {16}) is not checked by Cairn: the upstream checks its own
// arguments, and a saved snippet's declaration is refused (saved.ts).
import { setFlagsFromString } from "node:v8";

/** What ajv needs of a compiled pattern. */
export interface PatternTest {
  test(text: string): boolean;
}

let enabled = false;

/**
 * `pattern` compiled for the linear-time engine, without the `u` flag (which that engine does not support: text
 * of the Basic Multilingual Plane matches the same), or undefined when it cannot run there.
 */
export function linearPattern(pattern: string): RegExp | undefined {
  if (!enabled) {
    // Read when a regexp with the `l` flag is parsed; it changes nothing for other regexps.
    setFlagsFromString("--enable-experimental-regexp-engine");
    enabled = true;
  }
  try {
    return new RegExp(pattern, "l");
  } catch {
    return undefined;
  }
}

/** ajv's `code.regExp`: a linear-time pattern, or for one the linear engine cannot run a test that passes everything. */
export function linearRegExpEngine() {
  const engine = (pattern: string, _flags: string): PatternTest => {
    const compiled = linearPattern(pattern);
    if (compiled) return compiled;
    // ajv keys compiled patterns by their text.
    const passes = { test: () => true, toString: () => `/${pattern}/ (not checked)` };
    return passes;
  };
  // Named for ajv's standalone code, which Cairn does not generate.
  return Object.assign(engine, { code: "linearRegExp" });
}
