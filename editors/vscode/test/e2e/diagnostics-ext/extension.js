// A stand-in for a language server in the VS Code end-to-end test: after a
// Go document changes, it publishes (300 ms later, as a language server
// answers after a delay) one Error diagnostic, source "e2e-compiler", per
// line holding the marker E2E_BROKEN. The agentls extension reads them with
// vscode.languages.getDiagnostics, as it reads the Go extension's.
'use strict';
const vscode = require('vscode');

const MARKER = 'E2E_BROKEN';

function activate(context) {
  const collection = vscode.languages.createDiagnosticCollection('e2e-compiler');
  context.subscriptions.push(collection);
  const timers = new Map();
  const publish = (doc) => {
    if (doc.languageId !== 'go' && !doc.fileName.endsWith('.go')) return;
    const key = doc.uri.toString();
    clearTimeout(timers.get(key));
    timers.set(key, setTimeout(() => {
      const ds = [];
      for (let i = 0; i < doc.lineCount; i++) {
        const text = doc.lineAt(i).text;
        const col = text.indexOf(MARKER);
        if (col < 0) continue;
        const d = new vscode.Diagnostic(new vscode.Range(i, col, i, col + MARKER.length),
          `undefined: ${MARKER}`, vscode.DiagnosticSeverity.Error);
        d.source = 'e2e-compiler';
        ds.push(d);
      }
      collection.set(doc.uri, ds);
    }, 300));
  };
  context.subscriptions.push(vscode.workspace.onDidOpenTextDocument(publish));
  context.subscriptions.push(vscode.workspace.onDidChangeTextDocument((e) => publish(e.document)));
  vscode.workspace.textDocuments.forEach(publish);
}

function deactivate() {}

module.exports = { activate, deactivate };
