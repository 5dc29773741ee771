;;; e2e.el --- headless eglot test of agentls  -*- lexical-binding: t; -*-
;; timeout 60 emacs --batch -Q -l editors/emacs/e2e.el WORKSPACE/main.go
;; Env: AGENTLS_E2E_CMD (JSON array), AGENTLS_E2E_FINDINGS (file),
;;      AGENTLS_E2E_SCENARIOS=init: stop after the connection (initialize),
;;      AGENTLS_E2E_ASK_PROMPT (default "What does Greet do?").
;; eglot 1.9 does not declare window.workDoneProgress: the server must still
;; send a start and an end message (window/showMessage) and the result.
(require 'package)
;; Debian's elpa-* packages live here; -Q skips the site start that adds them.
(dolist (d (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
  (add-to-list 'load-path d))
(package-initialize)
(require 'eglot)
(require 'json)
(load (expand-file-name "agentls.el" (file-name-directory load-file-name)))

(defvar e2e-findings nil)
(defvar e2e-failed 0)
(defvar e2e-messages nil)
(defun e2e-note (ok what)
  (push (concat (if ok "PASS " "FAIL ") what) e2e-findings)
  (unless ok (setq e2e-failed (1+ e2e-failed)))
  ok)
(defun e2e-finish ()
  (push (format "emacs %s eglot %s; %d failed" emacs-version
                (or (and (boundp 'eglot--version) eglot--version) (ignore-errors (cadr (assq 'eglot package-alist))) "1.9 (Debian)") e2e-failed)
        e2e-findings)
  (with-temp-file (or (getenv "AGENTLS_E2E_FINDINGS") "/tmp/agentls-eglot-findings.txt")
    (insert (mapconcat #'identity (reverse e2e-findings) "\n") "\n"))
  (kill-emacs (if (> e2e-failed 0) 1 0)))
(advice-add 'message :around
            (lambda (orig fmt &rest args)
              (when fmt (push (apply #'format fmt args) e2e-messages))
              (apply orig fmt args)))
(defun e2e-wait (pred secs)
  (let ((deadline (+ (float-time) secs)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall pred)))

(condition-case err
    (let* ((cmd (append (json-parse-string (getenv "AGENTLS_E2E_CMD")) nil))
           (file (car command-line-args-left)))
      (setq command-line-args-left nil)
      (add-to-list 'eglot-server-programs `(fundamental-mode . ,cmd))
      (find-file file)
      (apply #'eglot (eglot--guess-contact))
      (let ((server nil))
        (e2e-note (e2e-wait (lambda () (setq server (eglot-current-server))) 20)
                  "eglot connected to the server")
        (when server
          (e2e-note (plist-get (eglot--capabilities server) :textDocumentSync)
                    (format "initialize answered with capabilities: %S"
                            (seq-filter #'keywordp (eglot--capabilities server)))))
        (when (and server (not (equal (getenv "AGENTLS_E2E_SCENARIOS") "init")))
          (e2e-note (e2e-wait (lambda () (plist-get (eglot--capabilities server) :executeCommandProvider)) 10)
                    "initialized; executeCommandProvider advertised")
          (setq e2e-messages nil)
          (agentls-run (or (getenv "AGENTLS_E2E_ASK_PROMPT") "What does Greet do?") "ask")
          (e2e-note (e2e-wait (lambda () agentls-last-result) 30) "agentls.run replied")
          (let* ((msgs (reverse e2e-messages))
                 (server-msgs (seq-filter (lambda (m) (string-match-p "Server reports" m)) msgs))
                 (result-pos (seq-position msgs (seq-find (lambda (m) (string-prefix-p "agentls: " m)) msgs))))
            (e2e-note (>= (length server-msgs) 2)
                      (format "start and end messages without work-done progress: %S" (mapcar #'substring-no-properties server-msgs)))
            (e2e-note (and server-msgs (string-match-p "start" (car server-msgs)))
                      "the first server message says the task started")
            (e2e-note (equal (plist-get agentls-last-result :status) "completed")
                      (format "result status %S" (plist-get agentls-last-result :status)))
            (e2e-note (and result-pos (seq-position msgs (car (last server-msgs)))
                           (< (seq-position msgs (car (last server-msgs))) result-pos))
                      "the end message arrives before the result is shown")
            (let ((a (plist-get agentls-last-result :answer)))
              (e2e-note (and (stringp a) (not (string-empty-p a))) (format "answer: %s" a))))
          (e2e-note (consp (append (agentls-tasks) nil)) "agentls-tasks lists tasks")
          (ignore-errors (eglot-shutdown server)))))
  (error (e2e-note nil (format "test error: %S" err))))
(e2e-finish)
