-- v1: the core tables. Times are Unix milliseconds, durations microseconds.

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE tasks (
    id               TEXT PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    kind             TEXT NOT NULL DEFAULT '',
    prompt           TEXT NOT NULL DEFAULT '',
    editor_context   TEXT NOT NULL DEFAULT 'null', -- JSON
    state            TEXT NOT NULL,
    stop_reason      TEXT NOT NULL DEFAULT '',
    follow_up_of     TEXT REFERENCES tasks(id) ON DELETE SET NULL,
    answer           TEXT NOT NULL DEFAULT '',
    summary          TEXT NOT NULL DEFAULT '',
    error            TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    ended_at         INTEGER,
    llm_calls        INTEGER NOT NULL DEFAULT 0,
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    cached_tokens    INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    model_us         INTEGER NOT NULL DEFAULT 0,
    tool_us          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX tasks_session ON tasks(session_id, created_at);

-- One row per message of a task's history, in order. A replayed write of
-- the same (task_id, seq) is ignored, so resume never duplicates.
CREATE TABLE messages (
    id               INTEGER PRIMARY KEY,
    task_id          TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL,
    role             TEXT NOT NULL,
    content          TEXT NOT NULL DEFAULT '',
    reasoning        TEXT NOT NULL DEFAULT '',
    tool_calls       TEXT, -- JSON array of llm.ToolCall, NULL when none
    tool_call_id     TEXT NOT NULL DEFAULT '',
    name             TEXT NOT NULL DEFAULT '',
    model_call       INTEGER NOT NULL DEFAULT 0,
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    cached_tokens    INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    duration_us      INTEGER NOT NULL DEFAULT 0,
    excluded         INTEGER NOT NULL DEFAULT 0,
    excluded_reason  TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    UNIQUE (task_id, seq)
);

CREATE TABLE plans (
    task_id    TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    plan       TEXT NOT NULL, -- JSON tools.Plan
    open_items INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE tool_calls (
    id          INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    call_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    args        TEXT NOT NULL DEFAULT '',
    duration_us INTEGER NOT NULL DEFAULT 0,
    is_error    INTEGER NOT NULL DEFAULT 0,
    summary     TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    UNIQUE (task_id, call_id)
);

CREATE TABLE edits (
    task_id     TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    path        TEXT NOT NULL, -- workspace-relative
    text_before TEXT NOT NULL DEFAULT '',
    text_after  TEXT NOT NULL DEFAULT '',
    created     INTEGER NOT NULL DEFAULT 0, -- the file did not exist before this edit
    deleted     INTEGER NOT NULL DEFAULT 0, -- the edit removed the file
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE INDEX edits_path ON edits(task_id, path, seq);

CREATE TABLE approvals (
    id         INTEGER PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    tool       TEXT NOT NULL,
    decision   TEXT NOT NULL,
    summary    TEXT NOT NULL DEFAULT '',
    command    TEXT NOT NULL DEFAULT '',
    prefix     TEXT NOT NULL DEFAULT '',
    path       TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);

CREATE TABLE lessons (
    id         INTEGER PRIMARY KEY,
    task_id    TEXT REFERENCES tasks(id) ON DELETE SET NULL,
    about      TEXT NOT NULL DEFAULT '', -- what the task was about (its prompt, files)
    text       TEXT NOT NULL,            -- what was learned
    tags       TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);
