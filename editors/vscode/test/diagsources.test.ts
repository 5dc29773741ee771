// Unit tests of src/diagsources.ts (node --test, no VS Code).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { DiagnosticSources, Manifest, languagesOfFile, servesLanguage } from '../src/diagsources';

// The shapes of real manifests: VS Code's built-in grammar-only Go
// extension, the Go extension (golang.go), and agentls itself.
const grammarGo: Manifest = { name: 'go', publisher: 'vscode', contributes: { languages: [{ id: 'go', extensions: ['.go'] }] } };
const goExt: Manifest = { name: 'go', publisher: 'golang', main: './dist/goMain.js', activationEvents: ['onLanguage:go', 'workspaceContains:*.go'] };
const agentls: Manifest = { name: 'agentls', publisher: 'agentls', main: './dist/extension.js', activationEvents: ['onLanguage:go', 'onStartupFinished'] };
const plain: Manifest = { name: 'plaintext', publisher: 'vscode', contributes: { languages: [{ id: 'plaintext', extensions: ['.txt'] }, { id: 'makefile', filenames: ['Makefile'] }] } };

test('languagesOfFile maps a file that is not open to the contributed languages', () => {
  const ms = [grammarGo, plain];
  assert.deepEqual(languagesOfFile(ms, '/w/main.go'), ['go']);
  assert.deepEqual(languagesOfFile(ms, '/w/NOTES.TXT'), ['plaintext']);
  assert.deepEqual(languagesOfFile(ms, '/w/Makefile'), ['makefile']);
  assert.deepEqual(languagesOfFile(ms, '/w/x.unknown'), []);
  assert.deepEqual(languagesOfFile(ms, '/w/.go'), [], 'a dot file has no extension');
});

test('servesLanguage: an extension with code that activates on the language, not a grammar, not agentls', () => {
  assert.equal(servesLanguage([grammarGo, agentls], ['go'], 'agentls.agentls'), false);
  assert.equal(servesLanguage([grammarGo, agentls, goExt], ['go'], 'agentls.agentls'), true);
  assert.equal(servesLanguage([goExt], ['plaintext'], 'agentls.agentls'), false);
});

test('DiagnosticSources: reported, maybe served, nothing', () => {
  const cases: { name: string; reported?: [string, string[]]; uri: string; langs: string[]; served: boolean; want: boolean | undefined }[] = [
    { name: 'nothing reported, no extension serves go (VS Code without the Go extension)', uri: 'file:///w/main.go', langs: ['go'], served: false, want: false },
    { name: 'nothing reported yet, the Go extension is installed (gopls loading)', uri: 'file:///w/main.go', langs: ['go'], served: true, want: undefined },
    { name: 'an empty report for the document (a clean file under gopls)', reported: ['file:///w/main.go', ['go']], uri: 'file:///w/main.go', langs: ['go'], served: false, want: true },
    { name: 'a report for another document of the language', reported: ['file:///w/a.go', ['go']], uri: 'file:///w/main.go', langs: ['go'], served: false, want: true },
    { name: 'a report for another language only', reported: ['file:///w/a.go', ['go']], uri: 'file:///w/notes.txt', langs: ['plaintext'], served: false, want: false },
  ];
  for (const c of cases) {
    const s = new DiagnosticSources();
    if (c.reported) s.reported(c.reported[0], c.reported[1]);
    assert.equal(s.checked(c.uri, c.langs, c.served), c.want, c.name);
  }
});
