// Versioned schema of the SQLite catalog, applied in order inside one write transaction at open.
// Append only: a shipped migration is never edited; a change is a new entry with the next version.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "initial",
    sql: `
      CREATE TABLE versions (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version >= 1),
        kind TEXT NOT NULL,
        media_type TEXT NOT NULL,
        bytes INTEGER NOT NULL CHECK (bytes >= 0),
        sha256 TEXT NOT NULL,
        filename TEXT,
        summary TEXT,
        source TEXT,
        created_at TEXT NOT NULL,
        checkpoint TEXT,
        sql TEXT,
        parameters TEXT,
        inputs TEXT,
        UNIQUE (name, version)
      );
      CREATE INDEX versions_sha256 ON versions (sha256);

      -- The name's current version; a row exists exactly while the name does.
      CREATE TABLE names (
        name TEXT PRIMARY KEY,
        current_id TEXT NOT NULL REFERENCES versions (id)
      ) WITHOUT ROWID;

      -- Last version number ever given to a name; never deleted, so numbers never repeat.
      CREATE TABLE name_counters (
        name TEXT PRIMARY KEY,
        last_version INTEGER NOT NULL
      ) WITHOUT ROWID;

      CREATE TABLE dependencies (
        version_id TEXT NOT NULL REFERENCES versions (id),
        position INTEGER NOT NULL,
        dep_id TEXT NOT NULL REFERENCES versions (id),
        PRIMARY KEY (version_id, position)
      ) WITHOUT ROWID;
      CREATE INDEX dependencies_dep ON dependencies (dep_id);

      -- A writer with an old idea of the counter is refused by the database itself.
      CREATE TRIGGER versions_never_reuse BEFORE INSERT ON versions
      WHEN NEW.version <= COALESCE((SELECT last_version FROM name_counters WHERE name = NEW.name), 0)
      BEGIN
        SELECT RAISE(ABORT, 'version number already used for this name');
      END;

      -- Current versions only; rowid = versions.seq.
      CREATE VIRTUAL TABLE search USING fts5 (name, summary, source, body, tokenize = 'unicode61 remove_diacritics 2');

      CREATE TABLE blob_leases (
        token TEXT PRIMARY KEY,
        sha256 TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX blob_leases_sha256 ON blob_leases (sha256);

      CREATE TABLE cleanup_pending (
        sha256 TEXT PRIMARY KEY,
        reason TEXT NOT NULL,
        recorded_at TEXT NOT NULL
      ) WITHOUT ROWID;
    `,
  },
];
