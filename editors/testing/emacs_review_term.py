"""Review before apply in Emacs (emacs -nw) in a real terminal (tmux),
against bin/agentls (:review "always" in the user's settings) + fake-model
(editors/testing/models/review.json).

  python3 emacs_review_term.py ROOT WORKSPACE ARTIFACTS
The model edits main.go in two hunks; the test accepts the first and
rejects the second in *agentls review* by keystrokes, then checks that the
buffer holds only the accepted hunk and that the model's next request
carried the rejected one (the fake model answers REJECTION-REACHED-MODEL
only when the last tool result names it). Screens: ARTIFACTS/emacs-review*.
AGENTLS_E2E_EMACS: the Emacs to run (run-emacs-versions runs 28 and 30).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from review_steps import review_two_hunks  # noqa: E402
from term import Blocked, Term  # noqa: E402

root, ws, art = sys.argv[1:4]
# The review's screenshot also goes to docs/images with AGENTLS_E2E_SHOTS=docs.
shots = os.path.join(root, "docs", "images") if os.environ.get("AGENTLS_E2E_SHOTS") == "docs" else art
probe = os.path.join(art, "emacs-review.probe.json")
init = os.path.join(art, "emacs-review-init.el")
with open(init, "w") as f:
    f.write("""(load %s)
(setq agentls-program (append (json-parse-string %s) nil)
      agentls-initialization-options '(:approval "ask" :apiKeyEnv "OPENAI_API_KEY" :review "always"))
(agentls-mode 1)
(setq inhibit-startup-screen t
      native-comp-async-report-warnings-errors 'silent
      warning-minimum-level :error)
""" % (json.dumps(root + "/editors/emacs/agentls.el"), json.dumps(os.environ["E2E_CMD_JSON"])))

t = Term("emacs-review", "%s -nw -Q -l %s main.go" % (os.environ.get("AGENTLS_E2E_EMACS", "emacs"), init), ws)


def probe_eval(expr, timeout=10):
    if os.path.exists(probe):
        os.remove(probe)
    t.send("M-:")
    t.type('(with-temp-file %s (insert (json-encode %s)))' % (json.dumps(probe), expr))
    t.send("Enter")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(probe) and os.path.getsize(probe) > 0:
            time.sleep(0.05)
            return json.load(open(probe))
        time.sleep(0.05)
    return None


def save_screen(name, docs=False):
    t.screenshot(os.path.join(shots if docs else art, name + ".png"))
    with open(os.path.join(art, name + ".txt"), "w") as f:
        f.write(t.screen())


try:
    t.note(t.wait_for(r"main\.go", 15) is not None, "Emacs shows main.go")
    t.send("M-x")
    t.wait_for(r"M-x", 3)
    t.type("agentls-run")
    t.send("Enter")
    t.note(t.wait_for(r"agentls task:", 5) is not None, "agentls-run asks for the task")
    t.type("Review two hunks in main.go")
    t.send("Enter")
    # The review buffer: both hunks in diff-mode, the keys at the top.
    review_two_hunks(t, '*agentls review*', save_screen, 'emacs-review')
    text = probe_eval('(with-current-buffer "main.go" (buffer-string))') or ""
    t.note("REVIEW-KEPT" in text, "the accepted hunk is in the buffer")
    t.note("REVIEW-REJECTED" not in text and 'Greet("world")' in text, "the rejected hunk is not: %r" % text)
    r = probe_eval("(plist-get agentls-last-result :answer)") or ""
    t.note("REJECTION-REACHED-MODEL" in r, "the task's answer: %r" % r)
    t.note(probe_eval('(if (get-buffer "*agentls review*") "open" "closed")') == "closed", "the review buffer is closed")
    log = open(os.path.join(art, os.environ.get("E2E_FAKE_MODEL_LOG", "emacs-review.fake-model.log"))).read()
    t.note('name="review 2: the rejected hunk reached the model' in log, "the fake model served the turn that matched the rejected hunk in the tool result")
except Blocked as e:
    t.note(False, str(e))
finally:
    save_screen("emacs-review-last")
    t.close()
print("emacs-review: %d failed" % t.failed)
sys.exit(1 if t.failed else 0)
