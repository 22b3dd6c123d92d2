// Argument checks against real upstream input schemas (odd-names fixture) and hand-written edge-case schemas.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import { CairnError } from "../../src/errors.js";
import { createLogger } from "../../src/log.js";
import type { Capability } from "../../src/registry/capability.js";
import { createCapabilityRegistry } from "../../src/registry/capability-registry.js";
import { createArgsValidator } from "../../src/registry/validate-args.js";
import { followUpstreams } from "../../src/upstream/upstream-capabilities.js";
import { createUpstreamManager, type UpstreamManager } from "../../src/upstream/upstream-manager.js";

const here = dirname(fileURLToPath(import.meta.url));
const registry = createCapabilityRegistry();
let manager: UpstreamManager;

beforeAll(async () => {
  manager = createUpstreamManager({
    odd: {
      command: process.execPath,
      args: [join(here, "../fixtures/servers/odd-names.mjs")],
      env: {},
      timeout_ms: 30_000,
      allow: [],
      deny: [],
    } as ServerConfig,
  });
  await manager.start();
  followUpstreams(manager, registry);
});
afterAll(() => manager.close());

function problemOf(run: () => void): CairnError {
  try {
    run();
  } catch (error) {
    if (error instanceof CairnError) return error;
    throw error;
  }
  throw new Error("expected INVALID_ARGUMENT");
}

const cap = (name: string) => registry.get(name) as Capability;

describe("ArgsValidator", () => {
  const validator = createArgsValidator();

  it("accepts valid arguments", () => {
    validator.validate(cap("odd.get-user"), { id: "usr_1", include: ["roles"] });
    validator.validate(cap("odd.class"), { document: { kind: "url", url: "https://example.com" }, labels: null });
  });

  it("runs every pattern in linear time: catastrophic ones finish on inputs backtracking would take years over", () => {
    const hostile = (pattern: string, where: "pattern" | "patternProperties" | "propertyNames") =>
      ({
        name: `hostile.${where}`,
        server: "hostile",
        tool: where,
        description: "",
        inputSchema:
          where === "pattern"
            ? { type: "object", properties: { s: { type: "string", pattern } } }
            : where === "patternProperties"
              ? { type: "object", patternProperties: { [pattern]: { type: "number" } } }
              : { type: "object", propertyNames: { pattern } },
      }) as Capability;
    const bomb = `${"a".repeat(60)}!`;
    for (const pattern of ["^(a+)+$", "^(a|a)*$", "^(a|aa)+$", "^(.*a){12}$", "^(a*)*b$"]) {
      expect(problemOf(() => validator.validate(hostile(pattern, "pattern"), { s: bomb })).code).toBe(
        "INVALID_ARGUMENT",
      );
      expect(problemOf(() => validator.validate(hostile(pattern, "propertyNames"), { [bomb]: 1 })).code).toBe(
        "INVALID_ARGUMENT",
      );
      validator.validate(hostile(pattern, "patternProperties"), { [bomb]: "not checked: the key does not match" });
    }
    // A long input, many at once.
    for (let i = 0; i < 50; i++) {
      expect(() => validator.validate(hostile("^(a+)+$", "pattern"), { s: `${"a".repeat(100_000)}!` })).toThrow();
    }
    // What the linear engine cannot run (a backreference, lookaround, a counted repeat over 16) is left to the
    // upstream: not enforced, never an error of Cairn's.
    for (const pattern of ["^(a)\\1$", "(?=a)b", "^[a-f]{64}$"]) {
      validator.validate(hostile(pattern, "pattern"), { s: "zzz" });
    }
    // Ordinary patterns still hold.
    expect(problemOf(() => validator.validate(hostile("^[a-z]+$", "pattern"), { s: "ABC" })).message).toContain(
      'must match pattern "^[a-z]+$"',
    );
    validator.validate(hostile("^[a-z]+$", "pattern"), { s: "abc" });
  });

  it("lists every problem with its path in one INVALID_ARGUMENT", () => {
    const error = problemOf(() => validator.validate(cap("odd.get-user"), { id: 7, include: ["roles", "salary"] }));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("invalid arguments for odd.get-user");
    expect(error.message).toContain("/id: must be string (got integer)");
    expect(error.message).toContain('/include/1: must be one of "roles", "address" (got "salary")');
    expect(error.message).toContain('describe_tools(["odd.get-user"])');
    expect(error.data?.problems).toHaveLength(2);
  });

  it("names missing properties, bad formats and patterns, and folds union branches into one line", () => {
    const missing = problemOf(() => validator.validate(cap("odd.2fa.check"), { code: "12ab" }));
    expect(missing.message).toContain('(root): missing required property "user"');
    expect(missing.message).toContain('/code: must match pattern "^\\d{6}$" (got "12ab")');
    const union = problemOf(() =>
      validator.validate(cap("odd.class"), { document: { kind: "pdf" }, labels: "x", threshold: 2 }),
    );
    expect(union.message).toContain(
      '/document: must match exactly one of the allowed shapes ({kind: "text"} | {kind: "url"})',
    );
    expect(union.message).toContain("/labels: must match one of the allowed shapes (array | null)");
    expect(union.message).toContain("/threshold: must be <= 1");
    expect(union.data?.problems).toHaveLength(3);
  });

  it("checks formats with ajv-formats", () => {
    const error = problemOf(() =>
      validator.validate(cap("odd.class"), { document: { kind: "url", url: "not a url" }, labels: [] }),
    );
    expect(error.message).toMatch(/must match format "uri"/);
  });

  it("checks 2020-12 schemas with $defs and prefixItems", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { tags: { type: "array", prefixItems: [{ $ref: "#/$defs/tag" }] } },
      $defs: { tag: { type: "string", minLength: 2 } },
      required: ["tags"],
      additionalProperties: false,
    };
    const capability = { name: "x.tagged", inputSchema: schema };
    validator.validate(capability, { tags: ["ok", 1] });
    const error = problemOf(() => validator.validate(capability, { tags: ["a"], extra: true }));
    expect(error.message).toContain("/tags/0: must NOT have fewer than 2 characters");
    expect(error.message).toContain('(root): unknown property "extra"');
  });

  it("skips a schema that does not compile, logging it once since each schema is compiled once", () => {
    const previous = process.env.CAIRN_LOG;
    process.env.CAIRN_LOG = "warn";
    const lines: string[] = [];
    try {
      const logged = createArgsValidator({ logger: createLogger("test", (line) => lines.push(line)) });
      const broken = { name: "x.broken", inputSchema: { type: "object", properties: { a: { $ref: "#/nowhere" } } } };
      logged.validate(broken, { a: 1 });
      logged.validate(broken, { a: 2 });
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain("input schema of x.broken does not compile");
    } finally {
      process.env.CAIRN_LOG = previous;
    }
  });
});
