// Cairn's log: one line per event on stderr (stdout is the MCP channel on stdio and must carry nothing else).
// Quiet by default; `CAIRN_LOG=debug|info|warn|error|silent` changes the threshold. Every line is redacted: values
// the configuration took from the environment (`${VAR}`) never reach it (decision 0011).

export type LogLevel = "debug" | "info" | "warn" | "error";

const RANK: Record<LogLevel | "silent", number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines carry `component`. */
  child(component: string): Logger;
}

/** Values shorter than this are not redacted: they are not secrets, and would blank out ordinary words. */
const MIN_SECRET_CHARS = 4;
const REDACTED = "[redacted]";
let secrets: string[] = [];
/** Credentials registered with their encodings (each once: stores register what they read on every read). */
const credentials = new Set<string>();

/**
 * Registers a value that must never appear in a log line or an error message: config/load.ts registers the value
 * of every `${VAR}` it expands. Its JSON-escaped form is registered too, since log fields are written as JSON.
 */
export function registerSecret(value: string): void {
  if (value.length < MIN_SECRET_CHARS) return;
  // A value with line breaks also comes back with them folded to spaces: fetch's Headers quote a header value so in
  // their error. (Its lines alone are not registered: a short line is an ordinary word, and would blank it out.)
  const forms = new Set(
    [value, JSON.stringify(value).slice(1, -1), value.trim(), value.replace(/\s+/g, " ").trim()].filter(
      (v) => v.length >= MIN_SECRET_CHARS,
    ),
  );
  // Longest first, so a secret that contains another is replaced whole.
  secrets = [...new Set([...secrets, ...forms])].sort((a, b) => b.length - a.length);
}

/**
 * Registers a credential Cairn sends or receives (an OAuth token, code, verifier, client secret): `registerSecret`
 * plus the encodings it may come back in, echoed by a server or quoted by an error: base64, base64url, URL- and
 * form-encoded.
 */
export function registerCredential(value: string): void {
  if (value.length < MIN_SECRET_CHARS || credentials.has(value)) return;
  credentials.add(value);
  for (const encoded of encodingsOf(value)) registerSecret(encoded);
}

/** `value` and the encodings a credential travels in: base64 (padded or not), base64url, URL- and form-encoded. */
export function encodingsOf(value: string): string[] {
  const bytes = Buffer.from(value, "utf8");
  const base64 = bytes.toString("base64");
  const form = new URLSearchParams({ v: value }).toString().slice(2);
  const forms = [
    value,
    base64,
    base64.replace(/=+$/, ""),
    bytes.toString("base64url"),
    encodeURIComponent(value),
    form,
  ];
  return [...new Set(forms)].filter((form) => form.length >= MIN_SECRET_CHARS);
}

/** `text` with every registered secret replaced by "[redacted]". */
export function redactSecrets(text: string): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * Makes every string written to `stream` pass through `redactSecrets` (main.ts does this for stderr): error prints
 * of every command, stacks and messages that quote a path or a header are covered at the one place they all leave.
 */
export function redactWrites(stream: NodeJS.WriteStream): void {
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  stream.write = ((chunk: unknown, ...rest: unknown[]) =>
    write(typeof chunk === "string" ? redactSecrets(chunk) : chunk, ...rest)) as typeof stream.write;
}

function threshold(): number {
  const wanted = (process.env.CAIRN_LOG ?? "warn").toLowerCase();
  return wanted in RANK ? RANK[wanted as LogLevel] : RANK.warn;
}

/** Creates a logger writing `time level [component] message {fields}` lines to stderr. */
export function createLogger(
  component = "cairn",
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  const min = threshold();
  const emit = (level: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < min) return;
    let extra = "";
    if (fields && Object.keys(fields).length > 0) {
      try {
        extra = ` ${JSON.stringify(fields)}`;
      } catch {
        extra = " {unserializable fields}";
      }
    }
    write(redactSecrets(`${new Date().toISOString()} ${level} [${component}] ${message}${extra}\n`));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (name) => createLogger(`${component}:${name}`, write),
  };
}
