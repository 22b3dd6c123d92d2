// Which tools a host sees: the profiles and the --tools rules, as a table.
import { describe, expect, it } from "vitest";
import { notEnabledError, selectToolNames } from "../../src/server/profiles.js";
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

describe("notEnabledError", () => {
  it("names --tools +name, the profile key that holds the tool and its snippet function", () => {
    const error = notEnabledError({ name: "delete", profiles: ["full"], snippet: "workspace.delete" }, "agent");
    expect(error.code).toBe("TOOL_NOT_ENABLED");
    expect(error.message).toContain("profile (agent)");
    expect(error.message).toContain("--tools +delete");
    expect(error.message).toContain('profile = "full" in cairn.toml');
    expect(error.message).toContain("workspace.delete(…)");
    expect(error.data).toMatchObject({ tool: "delete", enable: "--tools +delete", profiles: ["full"] });
  });

  it("names the smallest profile that lists it, and no snippet function when there is none", () => {
    const error = notEnabledError({ name: "recall", profiles: ["runtime", "full"] }, "minimal");
    expect(error.message).toContain('profile = "runtime"');
    expect(error.message).not.toContain("snippets reach it");
  });
});
