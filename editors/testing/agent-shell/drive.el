;;; drive.el --- drive Emacs agent-shell against `agentls acp', in batch  -*- lexical-binding: t; -*-

;; agent-shell, acp.el and shell-maker are in no package registry CI
;; reaches; editors/testing/run-agent-shell runs this by hand with their
;; sources in AGENT_SHELL_LISP (one folder each). The steps are those of
;; the issue's findings: a question, an edit of main.go while its buffer
;; holds an unsaved line, the permission's diff, a command's output.
;; Each check prints "PASS name" or "FAIL name: why"; the exit status is the
;; number of failures.

(require 'cl-lib)
(require 'map)
(require 'seq)
(dolist (d (split-string (getenv "AGENT_SHELL_LISP") ":" t))
  (add-to-list 'load-path d))
(require 'agent-shell)

(defvar drive-ws (file-name-as-directory (getenv "AGENTLS_E2E_WS")))
(defvar drive-bin (getenv "AGENTLS_BIN"))
(defvar drive-failures 0)
(defvar drive-perms nil "Permission requests agent-shell received, newest first.")

(defun drive-check (name ok &optional why)
  (if ok
      (princ (format "PASS %s\n" name))
    (setq drive-failures (1+ drive-failures))
    (princ (format "FAIL %s: %s\n" name (or why "")))))

(defun drive-wait (what pred &optional secs)
  "Run the event loop until PRED holds, at most SECS (default 30)."
  (let ((end (+ (float-time) (or secs 30))))
    (while (and (not (funcall pred)) (< (float-time) end))
      (accept-process-output nil 0.05))
    (or (funcall pred)
        (progn (drive-check what nil "timed out") nil))))

;; Every permission is recorded and allowed once.
(setq agent-shell-permission-responder-function
      (lambda (permission)
        (push permission drive-perms)
        (when-let* ((choice (seq-find (lambda (o) (equal (map-elt o :kind) "allow_once"))
                                      (map-elt permission :options))))
          (funcall (map-elt permission :respond) (map-elt choice :option-id))
          t)))

;; The editor holds main.go with a line that is not on disk.
(defvar drive-main (expand-file-name "main.go" drive-ws))
(defvar drive-unsaved "// unsaved: typed in Emacs, not saved\n")
(defvar drive-main-buffer (find-file-noselect drive-main))
(with-current-buffer drive-main-buffer
  (goto-char (point-min))
  (insert drive-unsaved))
(defvar drive-disk-before (with-temp-buffer (insert-file-contents drive-main) (buffer-string)))

(defvar drive-config
  (agent-shell-make-agent-config
   :identifier 'agentls
   :mode-line-name "agentls"
   :buffer-name "agentls"
   :shell-prompt "agentls> "
   :shell-prompt-regexp "agentls> "
   :needs-authentication nil
   :client-maker (lambda (buffer)
                   (agent-shell--make-acp-client :command drive-bin
                                                 :command-params '("acp")
                                                 :context-buffer buffer))))

(defvar drive-shell
  (let ((default-directory drive-ws))
    (agent-shell-start :config drive-config)))
(unless (bufferp drive-shell)
  (setq drive-shell (seq-find (lambda (b) (with-current-buffer b (derived-mode-p 'agent-shell-mode))) (buffer-list))))

(defun drive-state (&rest keys)
  (with-current-buffer drive-shell (map-nested-elt agent-shell--state keys)))

(defvar drive-events nil "agent-shell's events, newest first.")
(agent-shell-subscribe-to :shell-buffer drive-shell
                          :on-event (lambda (e) (push (map-elt e :event) drive-events)))
(defun drive-count (event) (seq-count (lambda (e) (eq e event)) drive-events))

(drive-wait "session started" (lambda () (and (drive-state :session :id) (> (drive-count 'prompt-ready) 0))) 60)

(defun drive-prompt (text)
  "Send TEXT and wait for the turn to end; return the shell's text after it."
  (let ((start (with-current-buffer drive-shell (point-max)))
        (busy nil))
    (with-current-buffer drive-shell
      (goto-char (point-max))
      (insert text)
      (shell-maker-submit))
    ;; The turn has ended when the shell was busy and is no longer, with
    ;; its prompt back at the end.
    (drive-wait (concat "turn ended: " text)
                (lambda () (with-current-buffer drive-shell
                             (if (shell-maker-busy)
                                 (progn (setq busy t) nil)
                               (and busy (string-suffix-p "agentls> " (buffer-substring-no-properties (max 1 (- (point-max) 20)) (point-max)))))))
                60)
    (accept-process-output nil 0.3)
    (with-current-buffer drive-shell
      (buffer-substring-no-properties (min start (point-max)) (point-max)))))

;; 1. ask
(let ((out (drive-prompt "XQ: What does Greet return?")))
  (drive-check "ask: the answer is shown" (string-match-p "Greet returns \"Hello, \"" out) out))

;; 2. edit with an unsaved buffer, permission with the diff
(setq drive-perms nil)
(let* ((out (drive-prompt "XEDIT: add a package comment to main.go"))
       (text (with-current-buffer drive-main-buffer (buffer-string)))
       (perm (car drive-perms))
       (tc (map-elt perm :tool-call)))
  (drive-check "edit: the unsaved line survives in the buffer"
               (string-prefix-p drive-unsaved text) text)
  (drive-check "edit: the change is in the buffer"
               (string-match-p "// Package main greets the world\\." text) text)
  (drive-check "edit: one permission asked" (= (length drive-perms) 1) (format "%d" (length drive-perms)))
  (drive-check "edit: the permission carries the diff"
               (or (map-elt tc :diff) (map-elt tc :diffs)
                   (seq-find (lambda (c) (equal (map-elt c 'type) "diff")) (map-elt tc :content)))
               (format "%S" tc))
  (drive-check "edit: the permission keeps the call's title"
               (equal (map-elt tc :title) "Edit main.go") (format "%S" (map-elt tc :title)))
  (drive-check "edit: the answer is shown" (string-match-p "Added a package comment" out) out)
  (princ (format "INFO edit: buffer modified %s; disk has the unsaved line %s\n"
                 (buffer-modified-p drive-main-buffer)
                 (with-temp-buffer (insert-file-contents drive-main) (string-prefix-p drive-unsaved (buffer-string))))))

;; 3. a command's output
(setq drive-perms nil)
(let ((out (drive-prompt "XCMD: print three lines")))
  (drive-check "command: permission asked" (= (length drive-perms) 1))
  (drive-check "command: the whole output is shown"
               (and (string-match-p "acpx-line-1" out) (string-match-p "acpx-line-3" out)) out)
  (drive-check "command: the answer is shown" (string-match-p "printed three lines" out) out))

(with-current-buffer drive-shell
  (write-region (point-min) (point-max) (expand-file-name "agent-shell.transcript.txt" (or (getenv "AGENTLS_E2E_ARTIFACTS") "."))))
(princ (format "Emacs %s: %d failure(s)\n" emacs-version drive-failures))
(kill-emacs drive-failures)
