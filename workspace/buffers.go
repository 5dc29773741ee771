package workspace

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Document is one text document the editor has open: its unsaved text and the
// version the editor gave it. A Document value is a snapshot; the store hands
// out copies, so holding one never races with later edits.
type Document struct {
	// Filename is the absolute, cleaned, OS-native path of the document.
	Filename   string
	LanguageID string
	Version    int32
	Text       string
	// SavedHash is the hash (HashText) of the text the disk held when the
	// editor opened the document or last saved it; "" when unknown (a new,
	// never saved file). The buffer is clean while its Text hashes to it.
	SavedHash string
	// diskHashes are the hashes of texts the disk held while the document
	// was open (seen by the watcher, or at a command's start), latest
	// last, at most maxDiskHashes. A buffer whose text is one of them is
	// clean too: an editor reloading it from disk may deliver an earlier
	// disk text after a later one was written (its watcher is behind).
	// Replaced, never appended to in place: Document copies share it.
	diskHashes []string
}

// maxDiskHashes bounds Document.diskHashes.
const maxDiskHashes = 16

// clean reports whether a buffer whose text hashes to h holds text the
// disk held: what it was opened or saved with, or a later disk text it was
// reloaded with.
func (d *Document) clean(h string) bool {
	if h == d.SavedHash {
		return true
	}
	for _, dh := range d.diskHashes {
		if dh == h {
			return true
		}
	}
	return false
}

// Change is one entry of a didChange notification: Range nil replaces the
// whole text, otherwise Text replaces Range (positions in UTF-16 units).
type Change struct {
	Range *Range
	Text  string
}

// Buffers is the store of the documents the editor has open, keyed by
// absolute filename. It is safe for concurrent use. Edits must be applied in
// the order the editor sent them; the LSP layer guarantees that by handling
// notifications in arrival order.
type Buffers struct {
	mu   sync.RWMutex         // guards docs and the Documents in it
	docs map[string]*Document // by Filename
	// onChange, when set, is called after every successful change, outside mu.
	onChange func(filename string, version int32)
	// client, when set, asks the editor for a file's text (see SetClientReader).
	client ClientReader
}

// ClientReader asks the editor for the text it holds of filename (absolute),
// saved or not; ok is false when the editor was not asked (not the kind of
// read it answers) or could not answer, and the disk is read instead.
type ClientReader func(ctx context.Context, filename string) (text string, ok bool)

// SetClientReader makes Workspace.ReadFile ask f first for a file no open
// document holds: an editor that answers reads on demand (the Agent Client
// Protocol's fs/read_text_file) instead of announcing every open buffer.
func (b *Buffers) SetClientReader(f ClientReader) {
	b.mu.Lock()
	b.client = f
	b.mu.Unlock()
}

// readClient is the editor's text of filename, when a ClientReader answers.
func (b *Buffers) readClient(ctx context.Context, filename string) (string, bool) {
	b.mu.RLock()
	f := b.client
	b.mu.RUnlock()
	if f == nil {
		return "", false
	}
	return f(ctx, filename)
}

// NewBuffers returns an empty store.
func NewBuffers() *Buffers { return &Buffers{docs: make(map[string]*Document)} }

// OnChange registers f to be called after each open, change or close.
// It replaces any earlier callback.
func (b *Buffers) OnChange(f func(filename string, version int32)) {
	b.mu.Lock()
	b.onChange = f
	b.mu.Unlock()
}

// Open records a document the editor opened.
func (b *Buffers) Open(filename, languageID string, version int32, text string) {
	b.mu.Lock()
	b.docs[filename] = &Document{Filename: filename, LanguageID: languageID, Version: version, Text: text}
	f := b.onChange
	b.mu.Unlock()
	if f != nil {
		f(filename, version)
	}
}

// Change applies the editor's changes, in order, to an open document and sets
// its version. On error the document is left as it was.
func (b *Buffers) Change(filename string, version int32, changes []Change) error {
	b.mu.Lock()
	doc, ok := b.docs[filename]
	if !ok {
		b.mu.Unlock()
		return fmt.Errorf("change to %s: document is not open", filename)
	}
	text := doc.Text
	for i, c := range changes {
		if c.Range == nil {
			text = c.Text
			continue
		}
		var err error
		text, err = ApplyEdits(text, []TextEdit{{Range: *c.Range, NewText: c.Text}})
		if err != nil {
			b.mu.Unlock()
			return fmt.Errorf("change %d to %s (version %d): %w", i, filename, version, err)
		}
	}
	doc.Text = text
	doc.Version = version
	f := b.onChange
	b.mu.Unlock()
	if f != nil {
		f(filename, version)
	}
	return nil
}

// Saved records that the editor saved the document (didSave): the disk
// now holds its text, so the buffer is clean until it changes again.
func (b *Buffers) Saved(filename string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if doc, ok := b.docs[filename]; ok {
		doc.SavedHash = hashText(doc.Text)
	}
}

// setSavedHash records that the disk holds hash for the document, if it is
// still at version and still holds that text.
func (b *Buffers) setSavedHash(filename string, version int32, hash string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if doc, ok := b.docs[filename]; ok && doc.Version == version && doc.SavedHash != hash && hashText(doc.Text) == hash {
		doc.SavedHash = hash
	}
}

// noteDiskHash records that the disk holds the text hashing to hash for
// the open document filename (see Document.diskHashes).
func (b *Buffers) noteDiskHash(filename, hash string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	doc, ok := b.docs[filename]
	if !ok || hash == "" {
		return
	}
	if n := len(doc.diskHashes); n > 0 && doc.diskHashes[n-1] == hash {
		return
	}
	keep := doc.diskHashes
	if len(keep) >= maxDiskHashes {
		keep = keep[len(keep)-maxDiskHashes+1:]
	}
	doc.diskHashes = append(append(make([]string, 0, len(keep)+1), keep...), hash)
}

// Close forgets a document the editor closed.
func (b *Buffers) Close(filename string) {
	b.mu.Lock()
	_, ok := b.docs[filename]
	delete(b.docs, filename)
	f := b.onChange
	b.mu.Unlock()
	if ok && f != nil {
		f(filename, -1)
	}
}

// Get returns a copy of the open document, if there is one.
func (b *Buffers) Get(filename string) (Document, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	doc, ok := b.docs[filename]
	if !ok {
		return Document{}, false
	}
	return *doc, true
}

// Filenames lists the open documents, sorted.
func (b *Buffers) Filenames() []string {
	b.mu.RLock()
	names := make([]string, 0, len(b.docs))
	for name := range b.docs {
		names = append(names, name)
	}
	b.mu.RUnlock()
	sort.Strings(names)
	return names
}
