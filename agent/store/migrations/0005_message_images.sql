-- v5: the images of a message (the pictures a user attached to a prompt
-- from an ACP client), kept as data beside the message's text: the media
-- type, the size and the bytes (decoded, never redacted or cut). data is
-- NULL for an image past the store's cap of image bytes per message
-- (MaxImageBytes): then only what it was is kept.

CREATE TABLE message_images (
    task_id   TEXT NOT NULL,
    seq       INTEGER NOT NULL, -- the message's seq
    idx       INTEGER NOT NULL, -- the image's place in the message, from 0
    mime_type TEXT NOT NULL,
    size      INTEGER NOT NULL, -- bytes of the image
    data      BLOB,
    PRIMARY KEY (task_id, seq, idx),
    FOREIGN KEY (task_id, seq) REFERENCES messages(task_id, seq) ON DELETE CASCADE
);
