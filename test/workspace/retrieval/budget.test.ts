// The one reply budget: max_bytes measures compact JSON; any other measure is passed in; several budgets hold at once;
// lists shrink from their end with what was left out counted; an impossible budget names the least it needs.
import { describe, expect, it } from "vitest";
import { CairnError } from "../../../src/errors.js";
import {
  allBudgets,
  byteBudget,
  fitList,
  fitted,
  jsonBytes,
  largest,
  measuredBudget,
} from "../../../src/workspace/retrieval/budget.js";
import { caught } from "../../helpers/caught.js";

/** A budget counting characters of the compact JSON: a stand-in for any measure a caller passes in. */
const charBudget = (limit: number) =>
  measuredBudget({ field: "max_chars", limit, unit: "chars", measure: (r) => JSON.stringify(r).length });

describe("byteBudget", () => {
  it("measures the UTF-8 bytes of the compact JSON, escapes included", () => {
    const reply = { text: 'é "q"\n' };
    const bytes = jsonBytes(reply);
    expect(bytes).toBe(Buffer.byteLength(JSON.stringify(reply)));
    expect(byteBudget(bytes).fits(reply)).toBe(true);
    expect(byteBudget(bytes - 1).fits(reply)).toBe(false);
    expect(byteBudget(bytes).maxContentBytes).toBe(bytes);
  });

  it("refuses an impossible budget with TOO_LARGE, the limit and the least the reply needs", () => {
    const reply = { text: "x".repeat(40) };
    const error = byteBudget(10).tooSmall(reply, "this page", "ask for less");
    expect(error).toBeInstanceOf(CairnError);
    expect(error.code).toBe("TOO_LARGE");
    expect(error.message).toBe(
      `max_bytes 10 cannot hold this page (at least ${jsonBytes(reply)} bytes): raise max_bytes, or ask for less`,
    );
    expect(error.data).toEqual({ max_bytes: 10, needed: jsonBytes(reply) });
  });
});

describe("measuredBudget", () => {
  it("uses the measure passed in, and a cheaper exact test when given one", () => {
    let measured = 0;
    const budget = measuredBudget({
      field: "max_tokens",
      limit: 5,
      unit: "tokens",
      measure: () => {
        measured++;
        return 9;
      },
      fits: () => true,
    });
    expect(budget.fits({})).toBe(true);
    expect(measured).toBe(0);
    expect(budget.tooSmall({}).data).toEqual({ max_tokens: 5, needed: 9 });
    expect(budget.maxContentBytes).toBe(Number.POSITIVE_INFINITY);
  });

  it("says why a reply cannot be sent whatever the limit, without a count", () => {
    const budget = measuredBudget({
      field: "max_tokens",
      limit: 5,
      unit: "tokens",
      measure: () => Number.POSITIVE_INFINITY,
      refuse: () => "it would be spilled: raise view_chars",
    });
    const error = budget.tooSmall({});
    expect(error.message).toBe("max_tokens 5: it would be spilled: raise view_chars");
    expect(error.data).toEqual({ max_tokens: 5 });
  });
});

describe("allBudgets", () => {
  it("holds every budget at once and names the first one a reply breaks", () => {
    const reply = { text: "héllo wörld" };
    const chars = JSON.stringify(reply).length;
    const bytes = jsonBytes(reply);
    expect(bytes).toBeGreaterThan(chars);
    const both = allBudgets(byteBudget(bytes), charBudget(chars));
    expect(both.fits(reply)).toBe(true);
    expect(allBudgets(byteBudget(bytes - 1), charBudget(chars)).tooSmall(reply).message).toMatch(/^max_bytes/);
    expect(allBudgets(byteBudget(bytes), charBudget(chars - 1)).tooSmall(reply).message).toMatch(/^max_chars/);
    expect(allBudgets(byteBudget(100), charBudget(50), undefined).maxContentBytes).toBe(100);
    const one = byteBudget(7);
    expect(allBudgets(one, undefined)).toBe(one);
  });

  it("fitted passes a reply that fits and throws the budget's error otherwise", () => {
    expect(fitted(undefined, { a: 1 })).toEqual({ a: 1 });
    expect(fitted(byteBudget(100), { a: 1 })).toEqual({ a: 1 });
    expect(() => fitted(byteBudget(3), { a: 1 })).toThrow(/max_bytes 3 cannot hold this reply/);
  });
});

describe("largest", () => {
  it("finds the largest value that fits, low - 1 when none does, and tries only values it returns as fitting", () => {
    for (let limit = -1; limit <= 12; limit++) {
      const tried: number[] = [];
      const found = largest(0, 10, (v) => {
        tried.push(v);
        return v <= limit;
      });
      expect(found).toBe(Math.min(limit, 10));
      expect(tried.length).toBeLessThanOrEqual(6);
    }
    expect(largest(3, 2, () => true)).toBe(2);
  });
});

describe("fitList", () => {
  const reply = { results: Array.from({ length: 30 }, (_, i) => ({ id: i, text: "w".repeat(i) })), note: "n" };

  it("returns the whole reply when it fits, and no omitted field", () => {
    expect(fitList(reply, "results", byteBudget(jsonBytes(reply)), "next")).toBe(reply);
    expect(fitList(reply, "results", undefined, "next")).toBe(reply);
  });

  it("keeps the longest prefix of the list that fits and counts the rest, for every budget up to the whole", () => {
    const least = jsonBytes({ ...reply, results: [], omitted: { results: 30, next_step: "raise it" } });
    for (let limit = least; limit < jsonBytes(reply); limit += 17) {
      const fit = fitList(reply, "results", byteBudget(limit), "raise it");
      expect(jsonBytes(fit)).toBeLessThanOrEqual(limit);
      const kept = fit.results.length;
      expect(fit.results).toEqual(reply.results.slice(0, kept));
      expect(fit.omitted).toEqual({ results: 30 - kept, next_step: "raise it" });
      expect(fit.note).toBe("n");
      // One more item would not have fitted.
      const more = {
        ...reply,
        results: reply.results.slice(0, kept + 1),
        omitted: { results: 29 - kept, next_step: "raise it" },
      };
      expect(jsonBytes(more)).toBeGreaterThan(limit);
    }
  });

  it("fails with TOO_LARGE and the least it needs when not even the empty list fits", async () => {
    const error = await caught((async () => fitList(reply, "results", byteBudget(20), "raise it"))());
    expect(error.code).toBe("TOO_LARGE");
    expect(error.message).toMatch(/max_bytes 20 cannot hold this reply with no results \(at least \d+ bytes\)/);
    const needed = (error.data as { needed: number }).needed;
    expect(fitList(reply, "results", byteBudget(needed), "raise it").results).toEqual([]);
  });
});
