// Which documents a diagnostics source checks, as far as VS Code lets an
// extension tell (no vscode import: unit-tested with node --test).
//
// VS Code does not say which language servers serve a document, and a
// clean file under a language server looks like a file nothing checks (no
// diagnostics either way). What tells them apart is the report itself: a
// language server publishes diagnostics for the documents it checks, an
// empty list for a clean one (gopls, vscode-languageclient's collections),
// and VS Code fires onDidChangeDiagnostics for it. So the extension
// remembers, for this window, the documents and languages some source
// other than agentls has reported for; and an extension that activates on
// the document's language may be a source that has not reported yet (a
// language server still loading the workspace).

/** Answer of agentls/diagnostics' `checked`: undefined when it cannot tell. */
export type Checked = boolean | undefined;

/** A slice of an extension's package.json. */
export interface Manifest {
  name?: string;
  publisher?: string;
  main?: string;
  browser?: string;
  activationEvents?: string[];
  contributes?: { languages?: { id?: string; extensions?: string[]; filenames?: string[] }[] };
}

/**
 * DiagnosticSources is what one window has seen of diagnostics sources: the
 * documents and the languages something other than agentls reported
 * diagnostics (possibly none) for.
 */
export class DiagnosticSources {
  private readonly uris = new Set<string>();
  private readonly languages = new Set<string>();

  /** reported notes that a source reported for uri, of these languages. */
  reported(uri: string, languageIds: readonly string[]): void {
    this.uris.add(uri);
    for (const id of languageIds) this.languages.add(id);
  }

  /**
   * checked says whether a source checks uri: true when one reported for
   * it or its language; undefined when none has, but an extension that
   * serves the language is installed (it may not have reported yet: the
   * server then waits for diagnostics, bounded); false when nothing can
   * (no such extension, nothing reported): the server does not wait.
   */
  checked(uri: string, languageIds: readonly string[], served: boolean): Checked {
    if (this.uris.has(uri) || languageIds.some((id) => this.languages.has(id))) return true;
    return served ? undefined : false;
  }
}

/** extnameOf: the file name's extension with its dot ("" when none). */
function extnameOf(file: string): string {
  const base = file.slice(file.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot) : '';
}

/**
 * languagesOfFile: the languages the extensions contribute for a file
 * (by its extension or file name), for a document that is not open.
 */
export function languagesOfFile(manifests: readonly Manifest[], file: string): string[] {
  const base = file.slice(file.lastIndexOf('/') + 1);
  const ext = extnameOf(file).toLowerCase();
  const out = new Set<string>();
  for (const m of manifests) {
    for (const l of m.contributes?.languages ?? []) {
      if (!l.id) continue;
      if ((ext && (l.extensions ?? []).some((e) => e.toLowerCase() === ext)) || (l.filenames ?? []).includes(base)) out.add(l.id);
    }
  }
  return [...out];
}

/**
 * servesLanguage: whether an extension other than self (publisher.name)
 * runs code when a document of one of these languages opens
 * ("onLanguage:ID"): the shape of a language server's extension (the Go,
 * Python, TypeScript ones). Extensions that only contribute a grammar have
 * no code to run.
 */
export function servesLanguage(manifests: readonly Manifest[], languageIds: readonly string[], self: string): boolean {
  const events = new Set(languageIds.map((id) => `onLanguage:${id}`));
  return manifests.some((m) => `${m.publisher}.${m.name}`.toLowerCase() !== self.toLowerCase() && Boolean(m.main || m.browser) &&
    (m.activationEvents ?? []).some((e) => events.has(e)));
}
