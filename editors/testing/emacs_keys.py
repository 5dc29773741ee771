"""Emacs driven by keys in a Term (term.py): M-x with answers, M-: and
probes that read a value back from Emacs. Shared by the Emacs terminal
end-to-end tests (emacs_term.py, emacs_journeys_term.py).

Emacs in a terminal treats C-g as a quit: it drops the keys still queued
behind it. So a helper that quits first (M-x, M-:) sends C-g and then its
key again until its prompt shows, and text the user typed is waited for on
the screen before anything sends a C-g after it.
"""
import json
import os
import re

from term import read_probe


class EmacsKeys:
    def __init__(self, term, probe, prompts=None):
        """probe: the file a probe writes its JSON value to; prompts: the
        minibuffer prompt (a regexp) each M-x command shows first."""
        self.t = term
        self.probe = probe
        self.prompts = prompts or {}

    def _prompt(self, key, pattern):
        for _ in range(10):
            self.t.send("C-g")
            self.t.send(key)
            if self.t.wait_for(pattern, 1):
                return

    def mx(self, command, *answers):
        """M-x COMMAND, then each answer once a prompt shows (keys typed
        before the minibuffer is ready would be lost). The first answer
        waits for the command's own prompt; a loaded machine may take
        seconds to show it."""
        for attempt in range(3):
            self._prompt("M-x", r"^M-x ?$")
            if not self._shows(r"^M-x ", command) and attempt < 2:
                continue  # _prompt quits and starts again
            self.t.send("Enter")
            prompt = self.prompts.get(command, r".")
            for n, a in enumerate(answers):
                self.t.wait_for(prompt, 30, allow_blockers=True)
                if not self._shows(prompt, a) and n == 0 and attempt < 2:
                    break  # nothing was answered yet: quit and start again
                self.t.send("Enter")
                prompt = r"."
            else:
                return

    def _shows(self, prompt, text):
        """Types text into the minibuffer and reports whether its line (the
        one showing prompt) then ends with it, so Enter sends what the test
        means: under load a C-g or key still queued from before may eat the
        first keys of what follows (Emacs in a terminal drops the keys
        queued behind a C-g)."""
        self.t.type(text)
        if not text:
            return True
        return self.t.wait_for(prompt + r".*" + re.escape(text) + r"\s*$", 10, allow_blockers=True) is not None

    def eval_expr(self, expr):
        """M-: EXPR once the Eval prompt shows, after a C-g that ends
        whatever was pending."""
        self._prompt("M-:", r"^Eval: ?$")
        self.t.type(expr)
        self.t.send("Enter")

    def probe_eval(self, expr, timeout=10, quit_first=True):
        """The value of EXPR (as JSON), read back through a file; None
        after timeout. quit_first=False sends M-: without a C-g before it,
        for a probe taken while a command waits (a C-g would end it).
        EXPR is evaluated first: it may change the current buffer."""
        if os.path.exists(self.probe):
            os.remove(self.probe)
        tmp = json.dumps(self.probe + ".tmp")
        form = ('(let ((v %s)) (with-temp-file %s (insert (json-encode v))) (rename-file %s %s t))'
                % (expr, tmp, tmp, json.dumps(self.probe)))
        if quit_first:
            self.eval_expr(form)
        else:
            self.t.send("M-:")
            self.t.type(form)
            self.t.send("Enter")
        return read_probe(self.probe, timeout)
