"""Schema of the cache database. Bump SCHEMA_VERSION on any change: an older cache is rebuilt."""

SCHEMA_VERSION = 13

DDL = """
CREATE TABLE memories (
    doc INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    id TEXT NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL,         -- JSON list
    scope TEXT NOT NULL,
    priority REAL NOT NULL,
    confidence TEXT NOT NULL,
    status TEXT NOT NULL,
    created TEXT,
    expires TEXT,
    supersedes TEXT NOT NULL,   -- JSON list
    related TEXT NOT NULL,      -- JSON list
    tokens INTEGER NOT NULL,
    digest TEXT NOT NULL,       -- sha1 of the memory's text: what a conflict scan saw
    length REAL NOT NULL        -- field-weighted length in terms
);
CREATE INDEX memories_id ON memories(id);
CREATE INDEX memories_scope ON memories(scope);
CREATE TABLE bodies (           -- kept apart so that ranking scans narrow rows only
    doc INTEGER PRIMARY KEY,
    body TEXT NOT NULL
);
CREATE TABLE problems (
    path TEXT NOT NULL,
    field TEXT,
    severity TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX problems_path ON problems(path);
CREATE TABLE postings (         -- inverted index: BM25 term weight (without idf) per memory
    term TEXT NOT NULL,
    doc INTEGER NOT NULL,
    weight REAL NOT NULL,
    PRIMARY KEY (term, doc)
) WITHOUT ROWID;
CREATE INDEX postings_doc ON postings(doc);
CREATE TABLE conflicts (         -- derived by scans; ids depend only on the memory pair
    conflict_id TEXT PRIMARY KEY,
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    type TEXT NOT NULL,
    detection_method TEXT NOT NULL,
    confidence REAL NOT NULL,
    description TEXT NOT NULL,
    evidence TEXT NOT NULL,
    record TEXT NOT NULL,          -- the whole Conflict as JSON
    detected_at TEXT NOT NULL,
    scan_id TEXT NOT NULL
);
CREATE INDEX conflicts_a ON conflicts(a);
CREATE INDEX conflicts_b ON conflicts(b);
CREATE TABLE conflict_scans (
    scan_id TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    record TEXT NOT NULL           -- the ScanResult as JSON
);
CREATE TABLE verdicts (           -- the judge's answers (conflicts/verdicts.py): paid for once
    first TEXT NOT NULL,           -- text hash of the memory shown first (the smaller hash)
    second TEXT NOT NULL,          -- text hash of the other
    model TEXT NOT NULL,           -- [judge] model as configured
    prompt TEXT NOT NULL,          -- the prompt's version
    first_id TEXT NOT NULL,        -- the memories' ids when judged (to find a memory's rows)
    second_id TEXT NOT NULL,
    verdict TEXT NOT NULL,         -- the checked verdict as JSON
    judged_at TEXT NOT NULL,
    PRIMARY KEY (first, second, model, prompt)
) WITHOUT ROWID;
CREATE INDEX verdicts_first_id ON verdicts(first_id);
CREATE INDEX verdicts_second_id ON verdicts(second_id);
-- files: marshal of {path: (size, mtime_ns)} for every file seen under .dmm/memory/, valid or
-- not; mtime -1 forces a re-read (the file changed too recently to trust its mtime).
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
-- what listings page by (docs/performance.md, "Listings at scale"): a page of conflicts, most
-- confident first, and their counts read this index, never the wide rows; `dmm status` counts
-- memories by status and scope from the second; the third finds the expired ones
CREATE INDEX conflicts_rank ON conflicts(confidence DESC, conflict_id, type, detection_method);
CREATE INDEX memories_status_scope ON memories(status, scope);
CREATE INDEX memories_expires ON memories(expires) WHERE expires IS NOT NULL;
-- corpus statistics, kept with the postings by every refresh (index/refresh.py): a scan or a
-- similarity search of one memory reads its terms' rows instead of counting postings over
-- the whole store.
CREATE TABLE terms (
    term TEXT PRIMARY KEY,
    df INTEGER NOT NULL,          -- memories (cache rows) with the term
    active INTEGER NOT NULL       -- of those, active ones (status active, not deprecated)
) WITHOUT ROWID;
-- memories whose body records a move "from X to Y" (body LIKE '%from %to %'), whatever their
-- status: the reversal arcs an incremental scan loads, found without reading every body
CREATE TABLE moves (doc INTEGER PRIMARY KEY);
-- each memory's text features for conflict scans (conflicts/feature_cache.py), kept by the
-- first scan that reads it: marshal of a dict; key fingerprints the memory's title, body, tags
-- and path and the code that computed them (a row whose key differs is computed again)
CREATE TABLE features (
    path TEXT PRIMARY KEY,
    key BLOB NOT NULL,
    data BLOB NOT NULL,
    code BLOB NOT NULL,         -- the code's part of key
    digest TEXT NOT NULL,       -- memories.digest and title when computed: SQL tells a row of
    title TEXT NOT NULL,        -- the memory as it is now from a stale one
    moved_from TEXT             -- X of the move "from X to Y" it records (lower case), if any
);
-- what an incremental scan asks of the rows of every memory recording a move (scanner._moves),
-- read from the index alone: the rows themselves are wide and scattered
CREATE INDEX features_valid ON features(path, code, digest, title, moved_from);
-- each memory as the last complete conflict scan saw it (conflicts/store.py): what changed
-- since is what an incremental scan reads, and a scan rewrites only the rows of the files a
-- refresh touched since (meta 'touched'); valid with meta 'scanned_with'
CREATE TABLE scanned (
    path TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    digest TEXT NOT NULL        -- memories.digest then
) WITHOUT ROWID;
-- every conflict this cache ever detected, with when it first did (a resolved conflict that
-- comes back is not new)
CREATE TABLE seen_conflicts (
    conflict_id TEXT PRIMARY KEY,
    detected_at TEXT NOT NULL
) WITHOUT ROWID;
"""
