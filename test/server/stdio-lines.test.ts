// The stdio line reader alone: lines within the limit come out whole however the stream is cut, longer ones come
// out as their length and the id their ends show. Issue 27.
import { describe, expect, it } from "vitest";
import { type LineEvent, LineReader } from "../../src/server/transports/stdio-lines.js";

/** Feeds `text` cut into pieces of the given sizes (cycled) and collects every event. */
function read(text: string, max: number, cuts: number[]): LineEvent[] {
  const reader = new LineReader(max);
  const bytes = Buffer.from(text, "utf8");
  const events: LineEvent[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = cuts[i % cuts.length] as number;
    events.push(...reader.push(bytes.subarray(at, at + size)));
    at += size;
  }
  return events.map((e) => (e.kind === "line" ? { kind: "line", line: Buffer.from(e.line) } : e));
}

const lines = (events: LineEvent[]) => events.map((e) => (e.kind === "line" ? e.line.toString() : e));

describe("LineReader", () => {
  it.each([[[1]], [[2, 3]], [[7]], [[64]], [[1000]]])("yields the same events whatever the cuts (%j)", (cuts) => {
    const text = `{"a":1}\n\r\n${"b".repeat(30)}\n{"c":2}\r\n${"d".repeat(31)}\nlast\n`;
    expect(lines(read(text, 30, cuts))).toEqual([
      '{"a":1}',
      "",
      "b".repeat(30),
      '{"c":2}',
      { kind: "oversized", bytes: 31, id: null },
      "last",
    ]);
  });

  it.each([
    ['{"jsonrpc":"2.0","id":7,"method":"x","params":{"p":"PAD"}}', 7],
    ['{"id":"req-1","jsonrpc":"2.0","method":"x","params":{"p":"PAD"}}', "req-1"],
    ['{"method":"x","params":{"p":"PAD"},"jsonrpc":"2.0","id":8}', 8],
    ['{"method":"x","params":{"p":"PAD"},"jsonrpc":"2.0","id":"a\\"b"}', 'a"b'],
    ['{"method":"x","params":{"p":"PAD","id":9}}', null],
    ['{"method":"x","params":{"p":"PAD\\"id\\":9}"}}', null],
    ['{"method":"x","id":{"n":1},"params":{"p":"PAD"}}', null],
    ['{"method":"x","params":{"p":"PAD"},"id":-3}  ', -3],
    ["PAD", null],
  ])("reads the id of an oversized line from its ends: %s", (shape, id) => {
    const text = `${shape.replace("PAD", "x".repeat(5000))}\n`;
    const [event] = read(text, 4096, [333]);
    expect(event).toEqual({ kind: "oversized", bytes: Buffer.byteLength(text) - 1, id });
  });

  it("accepts a line of exactly the limit and refuses one byte more", () => {
    expect(lines(read(`${"a".repeat(100)}\n${"b".repeat(101)}\n`, 100, [17]))).toEqual([
      "a".repeat(100),
      { kind: "oversized", bytes: 101, id: null },
    ]);
  });

  it("counts an oversized line across many chunks and reports it only at its newline", () => {
    const reader = new LineReader(1024);
    const chunk = Buffer.alloc(64 * 1024, "z");
    for (let i = 0; i < 100; i++) expect(reader.push(chunk)).toEqual([]);
    expect(reader.pending).toBe(true);
    expect(reader.push(Buffer.from("\n"))).toEqual([{ kind: "oversized", bytes: 100 * 64 * 1024, id: null }]);
    expect(reader.pending).toBe(false);
  });
});
