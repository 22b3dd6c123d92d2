// A skill's contract check, refs and ranking, without a workspace: every mismatch names the source, the position,
// what was expected and found, and the fix.
import { describe, expect, it } from "vitest";
import {
  contractProblems,
  type FoundSource,
  parseSkillRef,
  rankSkills,
  type SourceContract,
} from "../../src/tasks/skill-contract.js";

const SPENDING: SourceContract = {
  kind: "csv",
  media_type: "text/csv",
  format: "csv",
  columns: [
    { name: "category", type: "VARCHAR" },
    { name: "amount", type: "DECIMAL(18,2)" },
  ],
};

const table = (columns: [string, string][], kind = "csv", media_type = "text/csv"): FoundSource => ({
  kind,
  media_type,
  format: kind === "parquet" ? "parquet" : "csv",
  columns: columns.map(([name, type]) => ({ name, type })),
});

describe("contractProblems", () => {
  it("accepts the exact ordered schema, media type parameters aside", () => {
    const found = table(
      [
        ["category", "VARCHAR"],
        ["amount", "DECIMAL(18,2)"],
      ],
      "csv",
      "text/csv; charset=utf-8",
    );
    expect(contractProblems("spending", SPENDING, found)).toEqual([]);
  });

  it("refuses reordered columns, naming each position and saying they are the same columns", () => {
    const [problem, ...rest] = contractProblems(
      "spending (demo/feb v1)",
      SPENDING,
      table([
        ["amount", "DECIMAL(18,2)"],
        ["category", "VARCHAR"],
      ]),
    );
    expect(rest).toEqual([]);
    expect(problem).toContain("source spending (demo/feb v1)");
    expect(problem).toContain("column 1 expected category VARCHAR, found amount DECIMAL(18,2)");
    expect(problem).toContain("column 2 expected amount DECIMAL(18,2), found category VARCHAR");
    expect(problem).toContain("the same columns in another order");
    expect(problem).toContain("bind a version whose columns are exactly category VARCHAR, amount DECIMAL(18,2)");
  });

  it("refuses a changed type at its position", () => {
    const [problem] = contractProblems(
      "spending",
      SPENDING,
      table([
        ["category", "VARCHAR"],
        ["amount", "DOUBLE"],
      ]),
    );
    expect(problem).toContain("column 2 expected amount DECIMAL(18,2), found amount DOUBLE");
    expect(problem).not.toContain("another order");
  });

  it("refuses a missing column and an extra one", () => {
    const [missing] = contractProblems("spending", SPENDING, table([["category", "VARCHAR"]]));
    expect(missing).toContain("column 2 expected amount DECIMAL(18,2), found no column");
    const [extra] = contractProblems(
      "spending",
      SPENDING,
      table([
        ["category", "VARCHAR"],
        ["amount", "DECIMAL(18,2)"],
        ["note", "VARCHAR"],
      ]),
    );
    expect(extra).toContain("column 3 expected no column, found note VARCHAR");
  });

  it("refuses text where a table is expected, and a table where text is expected", () => {
    const [text] = contractProblems("spending", SPENDING, { kind: "note", media_type: "text/plain" });
    expect(text).toContain("the skill expects a csv table (text/csv), found a note (text/plain), not a table");
    expect(text).toContain("bind a CSV table");
    const policy: SourceContract = { kind: "document", media_type: "text/plain" };
    const [tableForText] = contractProblems("policy", policy, table([["a", "VARCHAR"]]));
    expect(tableForText).toContain("the skill expects a document (text/plain), not a table, found a csv table");
    expect(contractProblems("policy", policy, { kind: "document", media_type: "text/plain" })).toEqual([]);
  });

  it("refuses another table format with the same columns", () => {
    const found = table(
      [
        ["category", "VARCHAR"],
        ["amount", "DECIMAL(18,2)"],
      ],
      "parquet",
      "application/vnd.apache.parquet",
    );
    expect(contractProblems("spending", SPENDING, found)[0]).toContain("found a parquet table");
  });

  it("names five differing positions of a wide table and counts the rest", () => {
    const wide: SourceContract = {
      ...SPENDING,
      columns: Array.from({ length: 30 }, (_, i) => ({ name: `c${i}`, type: "BIGINT" })),
    };
    const found = table(Array.from({ length: 30 }, (_, i) => [`c${i}`, "DOUBLE"] as [string, string]));
    const [problem] = contractProblems("wide", wide, found);
    expect(problem?.match(/column \d+ expected/g)).toHaveLength(5);
    expect(problem).toContain("(and 25 more)");
    expect(problem).toContain("... (30 in all)");
  });

  it("passes on a reason DuckDB could not read the source", () => {
    const found: FoundSource = { kind: "json", media_type: "application/json", format: "json", unreadable: "bad" };
    const json: SourceContract = { kind: "json", media_type: "application/json", format: "json", columns: [] };
    expect(contractProblems("rows", json, found)).toEqual(["source rows: bad"]);
  });
});

describe("parseSkillRef", () => {
  it("reads a name and name@version, and refuses anything else with the fix", () => {
    expect(parseSkillRef("spending-review")).toEqual({ name: "spending-review" });
    expect(parseSkillRef("spending-review@12")).toEqual({ name: "spending-review", version: 12 });
    expect(() => parseSkillRef("a/b")).toThrow(/skill name or name@version/);
    expect(() => parseSkillRef("x@")).toThrow(/skill name or name@version/);
  });
});

describe("rankSkills", () => {
  const skills = [
    { name: "spending-review", objective: "Total spending by category", steps: ["totals", "review"], created_at: "1" },
    { name: "fares", objective: "Average fare per zone and spending cap", steps: ["by_zone"], created_at: "3" },
    { name: "delays", objective: "Delayed flights", steps: ["late"], created_at: "2" },
  ];

  it("weighs the name over step names over the objective, and leaves out what does not match", () => {
    const ranked = rankSkills(skills, "spending");
    expect(ranked.map((s) => [s.name, s.score])).toEqual([
      ["spending-review", 4],
      ["fares", 1],
    ]);
    expect(rankSkills(skills, "total").map((s) => s.name)).toEqual(["spending-review"]);
    expect(rankSkills(skills, "zone")[0]).toMatchObject({ name: "fares", score: 3 });
  });

  it("matches prefixes either way from four characters", () => {
    expect(rankSkills(skills, "spend").map((s) => s.name)).toEqual(["spending-review", "fares"]);
    expect(rankSkills(skills, "delayed")[0]?.name).toBe("delays");
    expect(rankSkills(skills, "xyz")).toEqual([]);
  });

  it("lists every skill as given (newest first) without a query", () => {
    expect(rankSkills(skills, "  ").map((s) => s.name)).toEqual(["spending-review", "fares", "delays"]);
  });
});
