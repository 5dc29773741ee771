-- v2: full-text search over lessons (L28) and indexes for statistics (L29).

CREATE VIRTUAL TABLE lessons_fts USING fts5(
    about, text, tags,
    content='lessons', content_rowid='id',
    tokenize='porter unicode61'
);

CREATE TRIGGER lessons_ai AFTER INSERT ON lessons BEGIN
    INSERT INTO lessons_fts(rowid, about, text, tags) VALUES (new.id, new.about, new.text, new.tags);
END;
CREATE TRIGGER lessons_ad AFTER DELETE ON lessons BEGIN
    INSERT INTO lessons_fts(lessons_fts, rowid, about, text, tags) VALUES ('delete', old.id, old.about, old.text, old.tags);
END;
CREATE TRIGGER lessons_au AFTER UPDATE ON lessons BEGIN
    INSERT INTO lessons_fts(lessons_fts, rowid, about, text, tags) VALUES ('delete', old.id, old.about, old.text, old.tags);
    INSERT INTO lessons_fts(rowid, about, text, tags) VALUES (new.id, new.about, new.text, new.tags);
END;

-- Lessons written under v1 become searchable.
INSERT INTO lessons_fts(lessons_fts) VALUES ('rebuild');

CREATE INDEX tool_calls_name ON tool_calls(name, duration_us);
CREATE INDEX tasks_state ON tasks(state, created_at);
