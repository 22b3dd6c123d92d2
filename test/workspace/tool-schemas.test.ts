// The workspace tools' input schemas as the MCP layer publishes them: JSON Schema with a description everywhere.
// Limits are stated in words; the Workspace enforces them (see hostile-input.test.ts).

import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  DeleteInputSchema,
  FindInputSchema,
  ImportInputSchema,
  InspectInputSchema,
  ResumeInputSchema,
  SaveInputSchema,
} from "../../src/workspace/tool-schemas.js";

const SCHEMAS = {
  save: SaveInputSchema,
  find: FindInputSchema,
  inspect: InspectInputSchema,
  resume: ResumeInputSchema,
  import: ImportInputSchema,
  delete: DeleteInputSchema,
};

describe("workspace tool schemas", () => {
  for (const [tool, schema] of Object.entries(SCHEMAS)) {
    it(`converts ${tool} to JSON Schema with a description on the tool and on every property`, () => {
      const json = z.toJSONSchema(schema) as {
        description?: string;
        properties: Record<string, { description?: string }>;
      };
      expect(json.description).toBeTruthy();
      for (const [key, property] of Object.entries(json.properties)) {
        expect(property.description, `${tool}.${key}`).toBeTruthy();
      }
    });
  }

  it("offers save a from handle and the SPEC's fields, requiring only name", () => {
    const json = z.toJSONSchema(SaveInputSchema) as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(json.properties)).toEqual(
      expect.arrayContaining([
        "name",
        "content",
        "from",
        "checkpoint",
        "kind",
        "summary",
        "source",
        "dependencies",
        "expected_version",
      ]),
    );
    expect(json.required).toEqual(["name"]);
  });

  it("accepts the smoke test's calls", () => {
    expect(SaveInputSchema.safeParse({ name: "smoke/a", content: "hello smoke" }).success).toBe(true);
    expect(
      SaveInputSchema.safeParse({
        name: "smoke/cp",
        kind: "checkpoint",
        checkpoint: { objective: "obj", next_step: "next" },
        dependencies: ["ws_x"],
      }).success,
    ).toBe(true);
    expect(InspectInputSchema.safeParse({ ref: "smoke/a", excerpt_bytes: 5 }).success).toBe(true);
    expect(SaveInputSchema.safeParse({ name: "x", kind: "spreadsheet" }).success).toBe(false);
  });
});
