;;; review-test.el --- headless test of agentls.el's review before apply  -*- lexical-binding: t; -*-
;; timeout 30 emacs --batch -Q -l editors/emacs/review-test.el
;; Hand-made workspace/applyEdit requests in the LSP 3.16 shape the server
;; sends under its `review' setting (changeAnnotations with
;; needsConfirmation, AnnotatedTextEdits, one annotation per hunk), parsed
;; as jsonrpc parses them, answered with the review buffer's keys.
;; PASS/FAIL lines on stdout; the exit code is the verdict.
(require 'json)
(load (expand-file-name "agentls.el" (file-name-directory load-file-name)))

(defvar rt-failed 0)
(defun rt-note (ok what)
  (princ (format "%s %s\n" (if ok "PASS" "FAIL") what))
  (unless ok (setq rt-failed (1+ rt-failed)))
  ok)

(defconst rt-text "package main\n\n// Greet says hello — to name.\nfunc Greet(name string) string {\n\treturn \"Hello, \" + name\n}\n\nfunc main() {}\n")

(defun rt-fresh ()
  "A fresh main.go in a temporary folder, visited; its path."
  (let* ((dir (make-temp-file "agentls-review" t))
         (file (expand-file-name "main.go" dir)))
    (with-temp-file file (insert rt-text))
    (with-current-buffer (find-file-noselect file) (revert-buffer t t t))
    file))

(defun rt-params (file &optional version second-confirms)
  "A parsed applyEdit request with two hunks for FILE."
  (json-parse-string
   (json-encode
    `((label . "agentls: edit main.go")
      (edit . ((changeAnnotations . ((h1 . ((label . "hunk 1 of 2") (needsConfirmation . t) (description . "main.go:3")))
                                     (h2 . ((label . "hunk 2 of 2") (needsConfirmation . ,(if (eq second-confirms 'no) :json-false t))))))
               ,(let ((edits (vector `((range . ((start . ((line . 2) (character . 0))) (end . ((line . 3) (character . 0)))))
                                       (newText . "// Greet says hello — ACCEPTED-HUNK.\n") (annotationId . "h1"))
                                     `((range . ((start . ((line . 4) (character . 8))) (end . ((line . 4) (character . 17)))))
                                       (newText . "REJECTED-HUNK") (annotationId . "h2")))))
                  (if version
                      `(documentChanges . ,(vector `((textDocument . ((uri . ,(agentls--uri file)) (version . ,version)))
                                                    (edits . ,edits))))
                    `(changes . ((,(intern (agentls--uri file)) . ,edits)))))))))
   :object-type 'plist :null-object nil :false-object :json-false))

(defun rt-review (file keys &optional version second-confirms)
  "Review the two-hunk edit of FILE typing KEYS; (ANSWER . BUFFER-TEXT)."
  (let* ((answer nil)
         (params (rt-params file version second-confirms)))
    (agentls--review params (lambda (r) (setq answer r)) (lambda () t))
    (when (get-buffer "*agentls review*")
      (with-current-buffer "*agentls review*"
        (setq rt-screen (concat (format "%s" header-line-format) "\n" (buffer-string))))
      (set-buffer "*agentls review*")
      (execute-kbd-macro (kbd keys)))
    (cons answer (with-current-buffer (find-buffer-visiting file) (buffer-string)))))
(defvar rt-screen "")

(condition-case err
    (let ((caps (agentls--capabilities)))
      (rt-note (plist-get (plist-get (plist-get caps :workspace) :workspaceEdit) :changeAnnotationSupport)
               "the client declares workspace.workspaceEdit.changeAnnotationSupport")
      (let* ((file (rt-fresh))
             (p (rt-params file))
             (r (agentls--review-items (plist-get p :edit)))
             (h (car r)))
        (rt-note (agentls--review-needed-p (plist-get p :edit)) "needsConfirmation is seen")
        (rt-note (= (length h) 2) (format "two annotations give two hunks: %d" (length h)))
        (rt-note (and (equal (agentls--rhunk-old (nth 0 h)) '("// Greet says hello — to name."))
                      (equal (agentls--rhunk-new (nth 0 h)) '("// Greet says hello — ACCEPTED-HUNK.")))
                 (format "hunk 1's old and new lines: %S %S" (agentls--rhunk-old (nth 0 h)) (agentls--rhunk-new (nth 0 h))))
        (rt-note (equal (agentls--rhunk-new (nth 1 h)) '("\treturn REJECTED-HUNK + name"))
                 (format "hunk 2 applies a part-line edit: %S" (agentls--rhunk-new (nth 1 h)))))
      ;; a then r: only the first hunk.
      (let* ((file (rt-fresh)) (res (rt-review file "a r")))
        (rt-note (and (string-match-p "a accept" rt-screen) (string-match-p "R reject all" rt-screen)
                      (string-match-p "^@@ -3,1 \\+3,1 @@ \\[ \\] undecided 1/2 main.go:3" rt-screen)
                      (string-match-p "^-// Greet says hello — to name" rt-screen)
                      (string-match-p "^\\+\treturn REJECTED-HUNK" rt-screen))
                 (format "the review buffer shows the keys and each hunk's old and new lines:\n%s" rt-screen))
        (rt-note (equal (car res) '(:result (:applied t))) (format "a then r answers applied: %S" (car res)))
        (rt-note (and (string-match-p "ACCEPTED-HUNK" (cdr res)) (not (string-match-p "REJECTED-HUNK" (cdr res)))
                      (string-match-p "\"Hello, \" \\+ name" (cdr res)))
                 "only the accepted hunk is in the buffer")
        (rt-note (not (get-buffer "*agentls review*")) "the review buffer is gone after the last decision"))
      ;; R: nothing.
      (let* ((file (rt-fresh)) (res (rt-review file "R")))
        (rt-note (equal (car res) '(:result (:applied :json-false :failureReason "rejected in review")))
                 (format "R answers applied false, rejected in review: %S" (car res)))
        (rt-note (equal (cdr res) rt-text) "R leaves the buffer as it was"))
      ;; A with versioned documentChanges.
      (let* ((file (rt-fresh)) (res (rt-review file "A" 0)))
        (rt-note (and (equal (car res) '(:result (:applied t))) (string-match-p "ACCEPTED-HUNK" (cdr res))
                      (string-match-p "REJECTED-HUNK" (cdr res)))
                 (format "A applies every hunk: %S" (car res))))
      ;; n, a, then C-c C-c: the second only; the first undecided is rejected.
      (let* ((file (rt-fresh)) (res (rt-review file "n a")))
        (rt-note (null (car res)) "one hunk left undecided: no answer yet")
        (set-buffer "*agentls review*")
        (execute-kbd-macro (kbd "C-c C-c"))
        (let ((text (with-current-buffer (find-buffer-visiting file) (buffer-string))))
          (rt-note (and (not (string-match-p "ACCEPTED-HUNK" text)) (string-match-p "REJECTED-HUNK" text))
                   "n moves to the second hunk, a accepts it, C-c C-c finishes with the first rejected")))
      ;; An edit that needs no confirmation is applied beside the reviewed one.
      (let* ((file (rt-fresh)) (res (rt-review file "r" nil 'no)))
        (rt-note (and (equal (car res) '(:result (:applied t))) (string-match-p "REJECTED-HUNK" (cdr res))
                      (not (string-match-p "ACCEPTED-HUNK" (cdr res))))
                 (format "a hunk without needsConfirmation is applied with the reviewed ones: %S" (car res))))
      ;; The buffer changed during the review (its version is newer).
      (let* ((file (rt-fresh)) (b (find-buffer-visiting file)))
        (with-current-buffer b (setq agentls--conn 'fake agentls--version 5))
        (let ((res (rt-review file "A" 1)))
          (rt-note (and (eq (plist-get (plist-get (car res) :result) :applied) :json-false)
                        (string-match-p "changed during review" (plist-get (plist-get (car res) :result) :failureReason)))
                   (format "a document newer than the edit is not applied: %S" (car res)))
          (rt-note (equal (cdr res) rt-text) "the newer buffer is untouched"))
        (with-current-buffer b (setq agentls--conn nil)))
      ;; Killing the review buffer rejects everything (the server is answered).
      (let* ((file (rt-fresh)) (answer nil))
        (agentls--review (rt-params file) (lambda (r) (setq answer r)) (lambda () t))
        (kill-buffer "*agentls review*")
        (rt-note (and (eq (plist-get (plist-get answer :result) :applied) :json-false)
                      (equal (with-current-buffer (find-buffer-visiting file) (buffer-string)) rt-text))
                 (format "killing the review buffer answers not applied and changes nothing: %S" answer)))
      ;; Withdrawn when the connection is gone.
      (let* ((file (rt-fresh)) (answer nil) (alive t))
        (agentls--review (rt-params file) (lambda (r) (setq answer r)) (lambda () alive))
        (setq alive nil)
        (let ((deadline (+ (float-time) 3)))
          (while (and (not answer) (< (float-time) deadline)) (sit-for 0.1)))
        (rt-note (and (plist-get answer :error) (not (get-buffer "*agentls review*")))
                 (format "the review is withdrawn (error answer, buffer closed) when the server is gone: %S" answer)))
      ;; Without needsConfirmation, agentls--apply-edit applies the whole edit.
      (let* ((file (rt-fresh)) (p (rt-params file)) (agentls-confirm-edits nil))
        (setq p (plist-put p :edit (plist-put (plist-get p :edit) :changeAnnotations nil)))
        (rt-note (equal (agentls--apply-edit p 'conn 1) '(:result (:applied t))) "an edit without annotations is applied at once")
        (rt-note (string-match-p "REJECTED-HUNK" (with-current-buffer (find-buffer-visiting file) (buffer-string)))
                 "whole")))
  (error (rt-note nil (format "test error: %S" err))))
(princ (format "emacs %s review: %d failed\n" emacs-version rt-failed))
(kill-emacs (if (> rt-failed 0) 1 0))
