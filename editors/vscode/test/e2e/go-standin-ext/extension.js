// A stand-in for the Go extension in the VS Code end-to-end test (the real
// golang.go cannot be installed on the CI machines). After the command
// agentlsE2eGo.enable it registers a rename and a references provider for
// Go files, as the Go extension does through gopls. Its answers come from
// whole-word matches of the identifier in the workspace's .go files (enough
// for the fixture, not a Go parser), and each answer is logged to
// $AGENTLS_E2E_GO_LOG so the test can tell that the editor's provider
// answered, not agentls's own gopls.
'use strict';
const vscode = require('vscode');
const fs = require('fs');

function logAnswer(line) {
  const f = process.env.AGENTLS_E2E_GO_LOG;
  if (f) fs.appendFileSync(f, line + '\n');
}

async function occurrences(word) {
  const out = [];
  const re = new RegExp(`\\b${word.replace(/[^\w]/g, '')}\\b`, 'g');
  for (const uri of await vscode.workspace.findFiles('**/*.go')) {
    const doc = await vscode.workspace.openTextDocument(uri);
    for (let i = 0; i < doc.lineCount; i++) {
      const text = doc.lineAt(i).text;
      // Not inside a string or a comment: enough for the fixture's code.
      const code = text.replace(/\/\/.*$/, '').replace(/"[^"]*"/g, (s) => ' '.repeat(s.length));
      for (let m = re.exec(code); m; m = re.exec(code)) out.push(new vscode.Location(uri, new vscode.Range(i, m.index, i, m.index + m[0].length)));
    }
  }
  return out;
}

function wordAt(doc, pos) {
  const r = doc.getWordRangeAtPosition(pos);
  return r ? doc.getText(r) : '';
}

function activate(context) {
  let on = false;
  context.subscriptions.push(vscode.commands.registerCommand('agentlsE2eGo.enable', () => {
    if (on) return;
    on = true;
    const go = { language: 'go' };
    context.subscriptions.push(vscode.languages.registerRenameProvider(go, {
      async provideRenameEdits(doc, pos, newName) {
        const word = wordAt(doc, pos);
        const edit = new vscode.WorkspaceEdit();
        const locs = await occurrences(word);
        for (const l of locs) edit.replace(l.uri, l.range, newName);
        logAnswer(`rename ${word} -> ${newName}: ${locs.length} places in ${new Set(locs.map((l) => l.uri.fsPath)).size} files`);
        return edit;
      },
    }));
    context.subscriptions.push(vscode.languages.registerReferenceProvider(go, {
      async provideReferences(doc, pos) {
        const word = wordAt(doc, pos);
        const locs = await occurrences(word);
        logAnswer(`references ${word}: ${locs.length}`);
        return locs;
      },
    }));
    logAnswer('enabled');
  }));
}

module.exports = { activate, deactivate() {} };
