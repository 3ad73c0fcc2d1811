"""Schema of the cache database. Bump SCHEMA_VERSION on any change: an older cache is rebuilt."""

SCHEMA_VERSION = 1

DDL = """
CREATE TABLE files (            -- every file seen under .dmm/memory/, valid or not
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL   -- -1 forces a re-read (file changed too recently to trust)
) WITHOUT ROWID;
CREATE TABLE memories (
    doc INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE REFERENCES files(path),
    id TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
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
    length REAL NOT NULL        -- field-weighted length in terms, for BM25
);
CREATE INDEX memories_id ON memories(id);
CREATE TABLE problems (
    path TEXT NOT NULL,
    field TEXT,
    severity TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX problems_path ON problems(path);
CREATE TABLE postings (         -- inverted index: field-weighted term frequency per memory
    term TEXT NOT NULL,
    doc INTEGER NOT NULL,
    tf REAL NOT NULL,
    PRIMARY KEY (term, doc)
) WITHOUT ROWID;
CREATE INDEX postings_doc ON postings(doc);
CREATE TABLE lexicon (word TEXT PRIMARY KEY, nbrs TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""
