// The phrase rerank of recall: a passage quoting the query's words in order outranks a near-duplicate that BM25 put
// first; short or absent runs leave the keyword order alone.
import { describe, expect, it } from "vitest";
import { byPhrase, type RecallItem } from "../../src/memory/recall.js";

const passage = (start: number, text: string): RecallItem => ({
  type: "passage",
  artifact_id: "ws_a",
  name: "lib",
  version: 1,
  start,
  end: start + text.length,
  text,
});

describe("byPhrase", () => {
  it("puts the passage holding the quoted sentence first, ahead of a near-duplicate ranked above it", () => {
    const utc = passage(
      0,
      "Sets the minutes value in the Date object using Universal Coordinated Time (UTC). setUTCMinutes",
    );
    const local = passage(100, "Sets the minutes value in the Date object using local time. setMinutes");
    const ranked = byPhrase([utc, local], "Sets the minutes value in the Date object using local time.");
    expect(ranked).toEqual([local, utc]);
  });

  it("keeps the keyword order when no item holds a run of three query words, or the query is short", () => {
    const a = passage(0, "alpha beta gamma delta");
    const b = passage(10, "gamma alpha delta beta");
    expect(byPhrase([a, b], "beta alpha")).toEqual([a, b]);
    expect(byPhrase([b, a], "alpha gamma beta epsilon")).toEqual([b, a]);
  });

  it("ranks observations by their label the same way", () => {
    const older: RecallItem = {
      type: "observation",
      id: 1,
      kind: "remember",
      at: "",
      label: "the team chose the weekly plan",
      detail: {},
    };
    const newer: RecallItem = {
      type: "observation",
      id: 2,
      kind: "remember",
      at: "",
      label: "weekly numbers differ from the plan",
      detail: {},
    };
    expect(byPhrase([newer, older], "we chose the weekly plan")).toEqual([older, newer]);
  });
});
