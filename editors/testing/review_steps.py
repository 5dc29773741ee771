"""The review steps the Neovim and Emacs review suites share: the scripted
model's two-hunk edit of main.go (models/review.json) is on the screen in
the editor's review view, the first hunk is accepted and the second
rejected by keystrokes, and the task ends with the model's answer saying
whether its next request carried the rejected hunk."""
import re


def review_two_hunks(t, view, save_screen, prefix):
    """Runs the steps in the review view named view (for the findings);
    save_screen(name, docs=False) keeps screens named prefix-*."""
    m = t.wait_for(r"REVIEW-REJECTED", 30)
    t.note(m is not None and t.wait_for(r"a accept", 2) is not None and t.wait_for(r"R reject all", 1) is not None,
           "%s shows the hunks and the keys" % view)
    s = t.screen()
    t.note("-// Greet returns a greeting for name." in s and "+// Greet returns a greeting for name. REVIEW-KEPT" in s,
           "hunk 1 shows its old and new line")
    t.note(re.search(r'-\s+fmt\.Println\(Greet\("world"\)\)', s) is not None
           and re.search(r'\+\s+fmt\.Println\(Greet\("REVIEW-REJECTED"\)\)', s) is not None,
           "hunk 2 shows its old and new line")
    t.note("1/2 main.go:5" in s and "2/2 main.go:11" in s,
           "each hunk names the file and line: %s" % [l for l in s.splitlines() if "/2 main.go" in l])
    save_screen(prefix, docs=True)
    # Accept the first hunk (the cursor starts on it), reject the second.
    t.type("a")
    t.note(t.wait_for(r"\[\+\] accept 1/2", 5) is not None, "a marks hunk 1 accepted and moves on")
    save_screen(prefix + "-after-a")
    t.type("r")
    # The answer streams in before the task ends: wait for its result too.
    t.note(t.wait_for(r"REJECTION-(REACHED-MODEL|MISSING)", 30) is not None
           and t.wait_for(r"# agentls task \S+: (completed|failed|cancelled)", 30) is not None, "the task ends after the review")
    t.note("REJECTION-REACHED-MODEL" in t.screen(), "the model's next request carried the rejected hunk (its answer says so)")
    save_screen(prefix + "-answer")
