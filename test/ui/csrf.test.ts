// The web view's form tokens and its same-origin rule for actions (decision 0234), as pure functions: a token opens
// one target for one sign-in under one key; a POST needs Origin or Sec-Fetch-Site: same-origin, or a bearer header.
import { describe, expect, it } from "vitest";
import { crossSiteRefusal } from "../../src/ui/actions.js";
import { type ActionTarget, FormTokens } from "../../src/ui/csrf.js";

const NAME: ActionTarget = { action: "delete", ref: "notes/plan", expected_version: 2 };

describe("FormTokens", () => {
  const forms = new FormTokens(Buffer.alloc(32, 7));
  const token = forms.issue("sign-in-a", NAME);

  it("accepts the token of exactly this sign-in and target", () => {
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(forms.check("sign-in-a", NAME, token)).toBe(true);
  });

  it.each<[string, string, ActionTarget, string | undefined]>([
    ["another sign-in", "sign-in-b", NAME, undefined],
    ["another name", "sign-in-a", { ...NAME, ref: "notes/plans" }, undefined],
    ["another expected_version", "sign-in-a", { ...NAME, expected_version: 3 }, undefined],
    ["an approval of the same ref", "sign-in-a", { action: "approve", ref: "notes/plan", revoke: false }, undefined],
    ["no token", "sign-in-a", NAME, ""],
    ["a token one character short", "sign-in-a", NAME, "short"],
    ["the token with a padding character", "sign-in-a", NAME, "pad"],
  ])("refuses %s", (_what, signIn, target, presented) => {
    const given =
      presented === ""
        ? undefined
        : presented === "short"
          ? token.slice(0, -1)
          : presented === "pad"
            ? `${token}=`
            : token;
    expect(forms.check(signIn, target, given)).toBe(false);
  });

  it("refuses a token made under another key (a restart)", () => {
    expect(new FormTokens(Buffer.alloc(32, 8)).check("sign-in-a", NAME, token)).toBe(false);
  });

  it("keeps approving and revoking apart", () => {
    const approve = forms.issue("a", { action: "approve", ref: "ws_x", revoke: false });
    expect(forms.check("a", { action: "approve", ref: "ws_x", revoke: true }, approve)).toBe(false);
  });
});

describe("crossSiteRefusal", () => {
  it.each<[string, Record<string, string>, boolean]>([
    ["an Origin (checked equal to the server's own before)", { origin: "http://127.0.0.1:1" }, true],
    ["Sec-Fetch-Site: same-origin", { "sec-fetch-site": "same-origin" }, true],
    ["a bearer header without either", { authorization: "Bearer x" }, true],
    ["Sec-Fetch-Site: same-site", { "sec-fetch-site": "same-site", origin: "http://127.0.0.1:1" }, false],
    [
      "Sec-Fetch-Site: cross-site, even with a bearer header",
      { "sec-fetch-site": "cross-site", authorization: "Bearer x" },
      false,
    ],
    ["Sec-Fetch-Site: none", { "sec-fetch-site": "none" }, false],
    ["a cookie alone", { cookie: "cairn_ui_1=x" }, false],
  ])("%s: accepted %s", (_what, headers, accepted) => {
    expect(crossSiteRefusal({ headers }) === undefined).toBe(accepted);
  });
});
