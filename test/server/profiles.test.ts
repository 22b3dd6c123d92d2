// Which tools a host sees: the profiles and the --tools rules, as a table.
import { describe, expect, it } from "vitest";
import { selectToolNames } from "../../src/server/profiles.js";
import { caught } from "../helpers/caught.js";

const ALL = ["execute_code", "read_output", "search_tools", "save", "find", "query", "import", "delete"];
/** As the operation table lists them: the opt-in tools only in full, the minimal ones everywhere. */
const TOOLS = ALL.map((name) => ({
  name,
  profiles:
    name === "import" || name === "delete"
      ? ["full"]
      : name === "execute_code" || name === "read_output"
        ? ["minimal", "agent", "full"]
        : ["agent", "full"],
}));

describe("selectToolNames", () => {
  it.each([
    ["minimal", [], ["execute_code", "read_output"]],
    ["agent", [], ["execute_code", "read_output", "search_tools", "save", "find", "query"]],
    ["full", [], ALL],
    ["agent", ["+import"], ["execute_code", "read_output", "search_tools", "save", "find", "query", "import"]],
    ["agent", ["+import", "-find"], ["execute_code", "read_output", "search_tools", "save", "query", "import"]],
    ["minimal", ["+query"], ["execute_code", "read_output", "query"]],
    ["full", ["-delete", "-import"], ["execute_code", "read_output", "search_tools", "save", "find", "query"]],
    ["agent", ["find", "execute_code"], ["execute_code", "find"]],
    ["minimal", ["find", "+save", "-find", "execute_code"], ["execute_code", "save"]],
    ["agent", [" +import ", ""], ["execute_code", "read_output", "search_tools", "save", "find", "query", "import"]],
  ] as const)("profile %s with --tools %j gives %j", (profile, spec, expected) => {
    expect(selectToolNames(TOOLS, profile, spec)).toEqual(expected);
  });

  it("refuses unknown names, with or without a sign, and names the choices", async () => {
    const error = await caught(Promise.resolve().then(() => selectToolNames(TOOLS, "agent", ["+imprt", "-nope", "x"])));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("imprt, nope, x");
    expect(error.message).toContain("choose from execute_code");
  });

  it("refuses a selection left with no tool", async () => {
    const error = await caught(
      Promise.resolve().then(() => selectToolNames(TOOLS, "minimal", ["-execute_code", "-read_output"])),
    );
    expect(error.code).toBe("INVALID_ARGUMENT");
  });
});
