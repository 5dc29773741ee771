-- v3: what worked. When a later task on the subject of failed tasks
-- succeeds, what it did is linked to each of their lessons, so a new task is
-- shown both why the earlier one failed and how a later one succeeded.

CREATE TABLE lesson_worked (
    id         INTEGER PRIMARY KEY,
    lesson_id  INTEGER NOT NULL REFERENCES lessons(id) ON DELETE CASCADE,
    task_id    TEXT REFERENCES tasks(id) ON DELETE SET NULL, -- the task that succeeded
    text       TEXT NOT NULL,                                -- what worked, as a sentence
    created_at INTEGER NOT NULL
);
CREATE INDEX lesson_worked_lesson ON lesson_worked(lesson_id, created_at);
