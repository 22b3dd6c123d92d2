// The command line's help lines: each operation's summary cut at its first whole sentence, never inside parentheses
// or at a colon (issue 31: `approve … approves one exact version (a name`).
import { describe, expect, it } from "vitest";
import { firstSentence } from "../../src/cli/operation-commands.js";
import { ConfigSchema } from "../../src/config/schema.js";
import { operations } from "../../src/operations/table.js";

describe("help summaries", () => {
  it.each([
    [
      "Approves one exact version (a name: its current one) for gates, or revokes. More here.",
      "approves one exact version (a name: its current one) for gates, or revokes",
    ],
    [
      "Lists schedules (all, or a task's), or sets one: every_s (at least 60; 0 removes it). Then more.",
      "lists schedules (all, or a task's), or sets one: every_s (at least 60; 0 removes it)",
    ],
    ["Claims a resource for ttl_s; one holder at a time.", "claims a resource for ttl_s"],
    ["Reads v1.2 of a file.", "reads v1.2 of a file"],
    ["No sentence end at all", "no sentence end at all"],
  ])("cuts %j to its first whole sentence", (text, expected) => {
    expect(firstSentence(text)).toBe(expected);
  });

  it("leaves every operation's help line with its brackets balanced", () => {
    for (const operation of operations(ConfigSchema.parse({}))) {
      const line = firstSentence(operation.summary.replace(/`/g, ""));
      const open = [...line].filter((c) => c === "(" || c === "[").length;
      const close = [...line].filter((c) => c === ")" || c === "]").length;
      expect(open, `${operation.name}: ${line}`).toBe(close);
      expect(line.length, operation.name).toBeGreaterThan(10);
    }
  });
});
