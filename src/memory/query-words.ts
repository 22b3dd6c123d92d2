// The words of a recall query that say what it is about: "continue the Granite Mug work" is about granite and mug.
// Filler (English function words and the words of picking work back up) neither searches nor ranks, or a passage
// about `IDBCursor.continue()` outranks the decision an earlier session remembered. A fixed English list, not a model.
import { ftsWords } from "../workspace/catalog/fts-text.js";

/** Function words, and the words any "continue where we left off" request holds whatever the work is. */
const FILLER: ReadonlySet<string> = new Set(
  `a about above after again against all am an and any are as at be been before being below between both but by can
  could did do does doing done down during each few for from further had has have having he her here hers him his how
  i if in into is it its itself just me more most my myself no nor not now of off on once only or other our ours out
  over own same she should so some such than that the their theirs them then there these they this those through to
  too under until up very was we were what when where which while who whom why will with would you your yours
  let lets us please ok okay also still yet again back
  continue continuing continued resume resuming resumed carry carrying proceed pick picking keep keeping going go get
  getting start starting restart finish finishing work working worked task tasks job stuff thing things bit
  left stopped last previous previously earlier prior session sessions time yesterday today ago recent recently
  where's we're we've i'm let's what's`
    .split(/\s+/)
    .flatMap((word) => ftsWords(word))
    .filter((word) => word.length > 0),
);

/** Whether `word` (lowercased, as ftsWords gives it) is filler. */
export function isFiller(word: string): boolean {
  return FILLER.has(word);
}

/**
 * A word folded to a rough stem, both sides alike, so "mugs" meets "mug" and "pricing" meets "priced": plural and
 * tense endings, a final e and a doubled final consonant only (no dictionary: "shipping" and "ship" meet, "ran" and
 * "run" do not).
 */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  // "what did we decide" asks for a remembered "Decision: …".
  if (word.startsWith("decid")) return "decision";
  let w = word;
  if (w.length > 4 && w.endsWith("ies")) w = `${w.slice(0, -3)}y`;
  else if (w.length > 5 && w.endsWith("ing")) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith("ed")) w = w.slice(0, -2);
  else if (w.length > 4 && w.endsWith("es")) w = w.slice(0, -2);
  else if (w.endsWith("s") && !w.endsWith("ss")) w = w.slice(0, -1);
  if (w.length > 3 && w.endsWith("e")) w = w.slice(0, -1);
  if (w.length > 3 && /([b-df-hj-np-rtv-z])\1$/.test(w)) w = w.slice(0, -1);
  return w;
}

/** The stems of `text`'s words that are not filler, in order, without repeats. */
export function contentStems(text: string): string[] {
  return [
    ...new Set(
      ftsWords(text)
        .filter((w) => !FILLER.has(w))
        .map(stem),
    ),
  ];
}

/**
 * `query` without its filler words, each kept word spelled as given (case and punctuation, so an identifier stays
 * exact for context); "" when every word is filler.
 */
export function withoutFiller(query: string): string {
  return query
    .split(/\s+/)
    .filter((token) => ftsWords(token).some((w) => !FILLER.has(w)))
    .join(" ");
}

/** How many of `stems` the text holds (by stem). */
export function coverage(stems: readonly string[], text: string): number {
  if (stems.length === 0) return 0;
  const held = new Set(ftsWords(text).map(stem));
  return stems.reduce((n, s) => n + (held.has(s) ? 1 : 0), 0);
}
