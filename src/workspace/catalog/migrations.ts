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
  {
    version: 2,
    name: "chunk index",
    sql: `
      -- Where indexing stands for each text version: pending until indexed to its end or skipped for good; obsolete
      -- once superseded or removed, until its chunks are dropped. No foreign key: a removed version's row outlives it.
      CREATE TABLE chunk_versions (
        version_id TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('pending', 'indexed', 'skipped', 'obsolete')),
        indexed_bytes INTEGER NOT NULL DEFAULT 0 CHECK (indexed_bytes >= 0),
        reason TEXT
      );
      CREATE INDEX chunk_versions_state ON chunk_versions (state);

      -- Byte ranges [start_byte, end_byte) of a version; the text lives in its blob, only its terms in chunk_text.
      CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        version_id TEXT NOT NULL,
        start_byte INTEGER NOT NULL,
        end_byte INTEGER NOT NULL
      );
      CREATE INDEX chunks_version ON chunks (version_id);

      -- rowid = chunks.id. Contentless: ranking needs the terms, not a second copy of the text.
      CREATE VIRTUAL TABLE chunk_text USING fts5 (
        text, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
      );

      -- Current text versions of an existing workspace join the backlog (cairn_is_text is registered at open).
      INSERT INTO chunk_versions (version_id, state)
        SELECT v.id, 'pending' FROM names n JOIN versions v ON v.id = n.current_id
        WHERE cairn_is_text(v.media_type) ORDER BY v.seq;
    `,
  },
];
