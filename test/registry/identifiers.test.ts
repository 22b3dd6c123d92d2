// Binding rules for tool names in snippets, and identifiers derived from arbitrary names.
import { describe, expect, it } from "vitest";
import {
  isSafeIdentifier,
  namespaceExpression,
  toIdentifier,
  toolAliases,
  toTypeName,
} from "../../src/registry/identifiers.js";

describe("isSafeIdentifier", () => {
  it("accepts ASCII identifiers", () => {
    for (const name of ["list_issues", "getUser", "$x", "_private", "a1"]) expect(isSafeIdentifier(name)).toBe(true);
  });

  it("rejects names with punctuation, a leading digit, non-ASCII letters or reserved words", () => {
    for (const name of ["get-user", "2fa.check", "delete", "class", "await", "__proto__", "constructor", "", "café"]) {
      expect(isSafeIdentifier(name)).toBe(false);
    }
  });
});

describe("toIdentifier and toTypeName", () => {
  it("derive valid identifiers from any name", () => {
    expect(toIdentifier("get-user")).toBe("get_user");
    expect(toIdentifier("2fa.check")).toBe("_2fa_check");
    expect(toIdentifier("delete")).toBe("_delete");
    expect(toIdentifier("")).toBe("_");
    expect(toTypeName("get-user")).toBe("GetUser");
    expect(toTypeName("list_issues")).toBe("ListIssues");
    expect(toTypeName("2fa.check")).toBe("_2FaCheck");
    expect(toTypeName("oauth2_token")).toBe("Oauth2Token");
    expect(toTypeName("getUser")).toBe("GetUser");
    for (const name of ["get-user", "2fa.check", "delete", "class", "x y z", "é"]) {
      expect(isSafeIdentifier(toIdentifier(name))).toBe(true);
    }
  });
});

describe("toolAliases", () => {
  it("gives each non-identifier name its identifier, unless that would hide a tool or pick one of two", () => {
    const aliases = toolAliases(["get-sum", "echo", "delete", "get-user", "get_user", "a-b", "a.b", "2fa.check"]);
    expect(Object.fromEntries(aliases)).toEqual({ "get-sum": "get_sum", delete: "_delete", "2fa.check": "_2fa_check" });
  });

  it("writes a namespace that is not an identifier through globalThis", () => {
    expect(namespaceExpression("everything")).toBe("everything");
    expect(namespaceExpression("my-server")).toBe('globalThis["my-server"]');
  });
});
