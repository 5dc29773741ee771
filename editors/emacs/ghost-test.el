;;; ghost-test.el --- headless test of agentls-ghost-mode's answer handling  -*- lexical-binding: t; -*-
;; timeout 30 emacs --batch -Q -l editors/emacs/ghost-test.el
;; Answers to textDocument/inlineCompletion as jsonrpc parses them, handed
;; to the code that shows them, without a server: which items show
;; (ranges, the typed prefix, UTF-16 columns), that an answer for a buffer
;; version, point or request that moved on is dropped, and what accept and
;; next do.  The real round trip is the tmux suite (editors/testing/ghost_term.py).
;; PASS/FAIL lines on stdout; the exit code is the verdict.
(require 'json)
(load (expand-file-name "agentls.el" (file-name-directory load-file-name)))

(defvar gt-failed 0)
(defun gt-note (ok what)
  (princ (format "%s %s\n" (if ok "PASS" "FAIL") what))
  (unless ok (setq gt-failed (1+ gt-failed)))
  ok)

(defun gt-parse (json) (json-parse-string json :object-type 'plist :array-type 'array :null-object nil :false-object :json-false))

(defun gt-shown (json)
  "The ghost texts (what is not typed yet) of the answer JSON at point."
  (mapconcat (lambda (i) (plist-get i :shown)) (agentls--ghost-items (gt-parse json) (point)) "|"))

(defun gt-ghost ()
  "The ghost text the overlay shows, or nil."
  (let ((ov (and agentls--ghost (plist-get agentls--ghost :overlay))))
    (and ov (overlay-buffer ov) (substring-no-properties (overlay-get ov 'before-string)))))

(with-current-buffer (get-buffer-create "ghost.go")
  (switch-to-buffer (current-buffer))
  (insert "func main() {\n\tx := fo\n}\n")
  (goto-char (point-min)) (forward-line 1) (end-of-line)
  ;; 1. Which items show.
  (gt-note (equal (gt-shown "{\"items\":[{\"insertText\":\"o()\"}]}") "o()")
           "an InlineCompletionList item without a range shows at point")
  (gt-note (equal (gt-shown "[{\"insertText\":\"o()\"}]") "o()") "an array of items is read too")
  (gt-note (equal (gt-shown "{\"items\":[{\"insertText\":\"foo()\",\"range\":{\"start\":{\"line\":1,\"character\":6},\"end\":{\"line\":1,\"character\":8}}}]}") "o()")
           "an item whose range holds the typed \"fo\" shows only what is not typed yet")
  (gt-note (equal (gt-shown "{\"items\":[{\"insertText\":\"bar()\",\"range\":{\"start\":{\"line\":1,\"character\":6},\"end\":{\"line\":1,\"character\":8}}}]}") "")
           "an item that does not begin with what its range holds is left out")
  (gt-note (equal (gt-shown "{\"items\":[{\"insertText\":{\"kind\":\"snippet\",\"value\":\"o($1)\"}}]}") "o($1)")
           "a StringValue insertText is read")
  (gt-note (equal (gt-shown "{\"items\":[{\"insertText\":\"\"},{\"insertText\":\"o()\"},{\"insertText\":\"o()\"}]}") "o()")
           "empty and repeated items are left out")
  (gt-note (equal (gt-shown "{\"items\":[]}") "") "an empty list shows nothing")

  ;; 2. Stale answers are dropped; a fresh one shows.
  (let ((answer (gt-parse "{\"items\":[{\"insertText\":\"o()\"}]}"))
        (pt (point)))
    (setq agentls--ghost-seq 5)
    (agentls--ghost-answer answer 4 agentls--version pt)
    (gt-note (null (gt-ghost)) "an answer to an older request is dropped")
    (let ((v agentls--version))
      (setq agentls--version (1+ agentls--version))
      (agentls--ghost-answer answer 5 v pt)
      (gt-note (null (gt-ghost)) "an answer for an older version of the buffer is dropped"))
    (agentls--ghost-answer answer 5 agentls--version (1- pt))
    (gt-note (null (gt-ghost)) "an answer for another point is dropped")
    (agentls--ghost-answer answer 5 agentls--version pt)
    (gt-note (equal (gt-ghost) "o()") "a fresh answer shows as an overlay at point")
    (gt-note (equal (buffer-substring-no-properties (line-beginning-position) (line-end-position)) "\tx := fo")
             "showing it leaves the buffer as it was")
    (gt-note (eq (key-binding (kbd "TAB")) #'agentls-ghost-accept) "TAB accepts while ghost text shows")
    (agentls-ghost-dismiss)
    (gt-note (and (null (gt-ghost)) (not (eq (key-binding (kbd "TAB")) #'agentls-ghost-accept)))
             "dismiss removes it, and TAB is the buffer's own again")

    ;; 3. Next, then accept replaces the range.
    (agentls--ghost-answer (gt-parse "{\"items\":[{\"insertText\":\"foo()\",\"range\":{\"start\":{\"line\":1,\"character\":6},\"end\":{\"line\":1,\"character\":8}}},{\"insertText\":\"fork()\",\"range\":{\"start\":{\"line\":1,\"character\":6},\"end\":{\"line\":1,\"character\":8}}}]}")
                           5 agentls--version pt)
    (agentls-ghost-next)
    (gt-note (equal (gt-ghost) "rk()") "next shows the second item")
    (agentls-ghost-next)
    (gt-note (equal (gt-ghost) "o()") "next after the last goes back to the first")
    (agentls-ghost-accept)
    (gt-note (and (equal (buffer-substring-no-properties (line-beginning-position) (line-end-position)) "\tx := foo()")
                  (eolp) (null (gt-ghost)))
             "accept replaces the range with the item, point after it, the ghost text gone")
    ;; A multi-line item.
    (agentls--ghost-answer (gt-parse "{\"items\":[{\"insertText\":\"\\n\\treturn x\"}]}") 5 agentls--version (point))
    (agentls-ghost-accept)
    (gt-note (equal (buffer-string) "func main() {\n\tx := foo()\n\treturn x\n}\n") "a multi-line item is inserted whole")))

(kill-emacs (if (> gt-failed 0) 1 0))
