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
  {
    version: 3,
    name: "durable tasks",
    sql: `
      -- A task: its current definition version and the counters that never repeat (definition versions, run
      -- generations), and the run whose brief is published (the newest generation that finished).
      CREATE TABLE tasks (
        name TEXT PRIMARY KEY,
        current_version INTEGER NOT NULL,
        last_generation INTEGER NOT NULL DEFAULT 0,
        published_run TEXT,
        published_generation INTEGER NOT NULL DEFAULT 0,
        latest_success TEXT
      ) WITHOUT ROWID;

      CREATE TABLE task_definitions (
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        definition TEXT NOT NULL,
        created_at TEXT NOT NULL,
        actor TEXT,
        PRIMARY KEY (name, version)
      ) WITHOUT ROWID;

      -- One attempt: the definition and source snapshot it pinned, what its steps produced so far, its brief.
      -- owner_* and heartbeat_at tell a live attempt from one whose process died (then it is interrupted).
      CREATE TABLE task_runs (
        id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL UNIQUE,
        task TEXT NOT NULL,
        generation INTEGER NOT NULL,
        definition_version INTEGER NOT NULL,
        state TEXT NOT NULL,
        snapshot TEXT NOT NULL,
        progress TEXT NOT NULL DEFAULT '{}',
        brief TEXT,
        error TEXT,
        run_artifact TEXT,
        published INTEGER NOT NULL DEFAULT 0,
        owner_host TEXT NOT NULL,
        owner_pid INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT
      ) WITHOUT ROWID;
      CREATE INDEX task_runs_task ON task_runs (task, seq);

      -- Reusable step results by cache key. The blob is referenced (collectBlobs keeps it) while the entry lives;
      -- evicting an entry never removes a version, so results a published run pins stay.
      CREATE TABLE step_cache (
        key TEXT PRIMARY KEY,
        sha256 TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        kind TEXT NOT NULL,
        media_type TEXT NOT NULL,
        meta TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        used_at INTEGER NOT NULL,
        hits INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID;
      CREATE INDEX step_cache_used ON step_cache (used_at);
      CREATE INDEX step_cache_sha256 ON step_cache (sha256);

      -- Who computes a key now. A lease expires unless renewed, and one whose process on this host is gone is taken over.
      CREATE TABLE step_leases (
        key TEXT PRIMARY KEY,
        token TEXT NOT NULL,
        owner_host TEXT NOT NULL,
        owner_pid INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID;

      -- Approvals of exact versions; a revocation ends one, and both stay as history.
      CREATE TABLE approvals (
        id INTEGER PRIMARY KEY,
        artifact_id TEXT NOT NULL,
        approver TEXT NOT NULL,
        approved_at TEXT NOT NULL,
        revoked_at TEXT,
        revoked_by TEXT
      );
      CREATE INDEX approvals_artifact ON approvals (artifact_id);

      CREATE TABLE task_schedules (
        task TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        schedule TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        next_due INTEGER,
        last_run TEXT,
        last_checked INTEGER
      ) WITHOUT ROWID;

      CREATE TABLE skills (
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        skill TEXT NOT NULL,
        description TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (name, version)
      ) WITHOUT ROWID;
      CREATE TABLE skill_names (
        name TEXT PRIMARY KEY,
        current_version INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 4,
    name: "session memory",
    sql: `
      -- One episode per MCP session: observations hang from it and expire with it after the retention period of
      -- inactivity (memory_settings.retention_days).
      CREATE TABLE episodes (
        id INTEGER PRIMARY KEY,
        session TEXT NOT NULL UNIQUE,
        started_at INTEGER NOT NULL,
        last_active INTEGER NOT NULL,
        observations INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX episodes_active ON episodes (last_active);

      -- Compact facts of what ran (run, upstream, write) and what a caller chose to remember. detail is bounded
      -- JSON, never a body; artifact_id is the version a write made, which keeps the observation while it exists.
      CREATE TABLE observations (
        id INTEGER PRIMARY KEY,
        episode_id INTEGER NOT NULL REFERENCES episodes (id),
        kind TEXT NOT NULL CHECK (kind IN ('run', 'upstream', 'write', 'remember')),
        at INTEGER NOT NULL,
        label TEXT NOT NULL,
        detail TEXT NOT NULL,
        event_id TEXT UNIQUE,
        artifact_id TEXT,
        pinned INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX observations_episode ON observations (episode_id);
      CREATE INDEX observations_artifact ON observations (artifact_id) WHERE artifact_id IS NOT NULL;

      -- rowid = observations.id. Contentless, as chunk_text: ranking needs the terms, the text is in observations.
      CREATE VIRTUAL TABLE observation_text USING fts5 (
        text, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
      );

      -- Persisted policy (retention_days) and counters of what collection removed.
      CREATE TABLE memory_settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 5,
    name: "claims",
    sql: `
      -- Fenced claims: one row per resource ever claimed, never deleted, so a ticket is never handed out twice.
      -- holder and expires_at are null once released; last_ticket is the newest ticket given for the resource.
      CREATE TABLE claims (
        resource TEXT PRIMARY KEY,
        last_ticket INTEGER NOT NULL,
        holder TEXT,
        expires_at INTEGER,
        claimed_at INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 6,
    name: "event log and usage",
    sql: `
      -- One row per workspace write, appended in the write's transaction. seq never repeats (AUTOINCREMENT), so an
      -- expiry marker's before_seq stays true after the rows before it are removed.
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        actor TEXT NOT NULL,
        role TEXT NOT NULL,
        operation TEXT NOT NULL,
        ref TEXT,
        artifact_id TEXT,
        version INTEGER,
        detail TEXT NOT NULL DEFAULT '{}'
      );
      CREATE INDEX events_artifact ON events (artifact_id) WHERE artifact_id IS NOT NULL;
      CREATE INDEX events_at ON events (at);

      -- Each pass that removed old events: everything before before_seq is gone.
      CREATE TABLE event_expiry (
        before_seq INTEGER PRIMARY KEY,
        removed_at TEXT NOT NULL,
        removed INTEGER NOT NULL,
        through_at TEXT NOT NULL
      );

      -- Usage aggregated per UTC day, operation and surface; latency is a JSON array of bucket counts.
      CREATE TABLE usage_daily (
        day TEXT NOT NULL,
        operation TEXT NOT NULL,
        surface TEXT NOT NULL,
        calls INTEGER NOT NULL,
        failures INTEGER NOT NULL,
        errors TEXT NOT NULL,
        latency TEXT NOT NULL,
        measured INTEGER NOT NULL,
        reply_tokens INTEGER NOT NULL,
        json_tokens INTEGER NOT NULL,
        PRIMARY KEY (day, operation, surface)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 7,
    name: "handles of identities",
    sql: `
      -- Each identity's res_ and art_ handles when several servers share the catalog (decision 0293): a result's JSON
      -- in the row, an artifact's or a spilled copy's bytes in the blob store (sha256, which keeps the blob from
      -- collection). owner is the identity's name and role; used_at orders evictions (the least recently used first).
      CREATE TABLE handles (
        handle TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        lane TEXT NOT NULL CHECK (lane IN ('result', 'artifact', 'spill')),
        bytes INTEGER NOT NULL CHECK (bytes >= 0),
        label TEXT,
        filename TEXT,
        media_type TEXT,
        json TEXT,
        sha256 TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX handles_owner ON handles (owner, lane, used_at);
      CREATE INDEX handles_expiry ON handles (expires_at);
      CREATE INDEX handles_sha256 ON handles (sha256) WHERE sha256 IS NOT NULL;

      -- Handles evicted to make room, so that they answer HANDLE_EVICTED with why; a bounded number per owner.
      CREATE TABLE handle_tombstones (
        handle TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        at INTEGER NOT NULL,
        reason TEXT NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX handle_tombstones_owner ON handle_tombstones (owner, at);
    `,
  },
  {
    version: 8,
    name: "servers of the workspace",
    sql: `
      -- The HTTP servers of the workspace and the address each answers at (decision 0294): a retry that carries the
      -- approval state of a run one server holds, reaching another, is forwarded there. seen_at: the last announcement.
      CREATE TABLE servers (
        instance TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        seen_at INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
];
