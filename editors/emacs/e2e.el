;;; e2e.el --- headless test of agentls.el beside eglot  -*- lexical-binding: t; -*-
;; timeout 60 emacs --batch -Q -l editors/emacs/e2e.el WORKSPACE/main.go
;; Env: AGENTLS_E2E_CMD (JSON array), AGENTLS_E2E_FINDINGS (file),
;;      AGENTLS_E2E_SCENARIOS=init: stop after the connection (initialize).
;; agentls runs on its own jsonrpc connection: eglot keeps the major mode's
;; server (gopls with go-mode when both are installed).
(require 'package)
;; Debian's elpa-* packages live here; -Q skips the site start that adds them.
;; On Emacs 29+ the built-in eglot, project, xref, ... are newer than
;; Debian's elpa copies (made for Emacs 28): keep the built-in ones.
(dolist (d (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
  (unless (and (> emacs-major-version 28)
               (string-match-p "/\\(eglot\\|project\\|xref\\|seq\\|jsonrpc\\|flymake\\|eldoc\\|external-completion\\)-[0-9]" d))
    (add-to-list 'load-path d)))
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
  (push (format "emacs %s; %d failed" emacs-version e2e-failed) e2e-findings)
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
      (setq command-line-args-left nil
            agentls-program cmd
            agentls-confirm-edits nil) ; batch Emacs cannot answer y-or-n-p
      (find-file file)
      (let ((gopls (and (require 'go-mode nil t) (executable-find "gopls"))))
        (e2e-note gopls "go-mode and gopls are installed (scripts/setup)")
        (when gopls
          (go-mode)
          (apply #'eglot (eglot--guess-contact))
          (e2e-note (e2e-wait (lambda () (eglot-current-server)) 20) "eglot started gopls for go-mode")))
      (agentls-mode 1)
      (let ((conn (agentls--connection)))
        (e2e-note (jsonrpc-running-p conn) "agentls connected on its own jsonrpc connection")
        (e2e-note (not (get-buffer "*Warnings*"))
                  (format "no *Warnings* at start (jsonrpc %s): %S" emacs-version
                          (and (get-buffer "*Warnings*") (with-current-buffer "*Warnings*" (buffer-string)))))
        (when (eglot-current-server)
          (e2e-note (string-match-p "gopls" (format "%s" (process-command (jsonrpc--process (eglot-current-server)))))
                    (format "eglot's server is still gopls: %S" (process-command (jsonrpc--process (eglot-current-server))))))
        (e2e-note (buffer-local-value 'agentls--conn (current-buffer)) "main.go opened on the agentls connection (didOpen)")
        (unless (equal (getenv "AGENTLS_E2E_SCENARIOS") "init")
          ;; An ask task: one message, the whole answer in *agentls answer*.
          (setq e2e-messages nil)
          (agentls-run "What does Greet do?" "ask")
          (e2e-note (e2e-wait (lambda () agentls-last-result) 30) "agentls.run replied")
          (e2e-note (equal (plist-get agentls-last-result :status) "completed")
                    (format "result status %S" (plist-get agentls-last-result :status)))
          (let ((results (seq-filter (lambda (m) (string-prefix-p "agentls: " m))
                                     (seq-remove (lambda (m) (string-prefix-p "agentls: started" m)) e2e-messages)))
                (a (plist-get agentls-last-result :answer)))
            (e2e-note (= (length results) 1) (format "the result is shown once: %S" results))
            (e2e-note (and (stringp a) (get-buffer "*agentls answer*")
                           (with-current-buffer "*agentls answer*" (string-match-p (regexp-quote a) (buffer-string))))
                      "the whole answer is in *agentls answer*"))
          ;; An edit task arrives as workspace/applyEdit; undo reverts it.
          (let ((prev agentls-last-result))
            (agentls-run "Add a header comment to main.go" "edit")
            (e2e-note (e2e-wait (lambda () (not (eq agentls-last-result prev))) 30) "the edit task ended")
            (e2e-note (string-match-p "// Package main greets the world." (buffer-string)) "the edit is in the buffer")
            (agentls-undo (plist-get agentls-last-result :taskId))
            (e2e-note (e2e-wait (lambda () (not (string-match-p "// Package main greets" (buffer-string)))) 10)
                      (format "agentls-undo reverted the buffer: %S" (plist-get agentls-last-undo :summary))))
          ;; The handlers of agentls/saveDocuments and agentls/diagnostics.
          (goto-char (point-max))
          (insert "\n// unsaved\n")
          (let* ((uri (agentls--uri buffer-file-name))
                 (r (agentls--save-documents (list :uris (vector uri)))))
            (e2e-note (and (equal (append (plist-get r :saved) nil) (list uri)) (not (buffer-modified-p)))
                      (format "agentls/saveDocuments saved the modified buffer: %S" r)))
          (let ((d (agentls--diagnostics (list :uris (vector (agentls--uri buffer-file-name))))))
            (e2e-note (and (vectorp d) (= (length d) 1) (vectorp (plist-get (aref d 0) :diagnostics)))
                      (format "agentls/diagnostics answers in LSP shape: %S" d)))
          ;; agentls/lsp: forwarded to the buffer's eglot server (gopls).
          (when (eglot-current-server)
            (let* ((uri (agentls--uri buffer-file-name))
                   (pos (save-excursion (goto-char (point-min)) (search-forward "func Greet") (backward-word)
                                        (eglot--pos-to-lsp-position (point))))
                   (got 'none))
              ;; A gopls still loading the package answers null: asked
              ;; again (agentls itself then asks its own server).
              (dotimes (_ 5)
                (unless (vectorp got)
                  (setq got 'none)
                  (agentls--lsp-forward (list :method "textDocument/references"
                                              :params (list :textDocument (list :uri uri) :position pos
                                                            :context (list :includeDeclaration t)))
                                        (lambda (r) (setq got r)))
                  (e2e-wait (lambda () (not (eq got 'none))) 20)
                  (unless (vectorp got) (sleep-for 1))))
              (e2e-note (and (vectorp got) (>= (length got) 2))
                        (format "agentls/lsp forwards textDocument/references to eglot's gopls: %S" got))))
          (e2e-note (consp (agentls-tasks)) "agentls-tasks lists tasks")
          ;; A custom command: a prompt file with $ARGUMENTS, run by name.
          (make-directory ".agentls/commands" t)
          (with-temp-file ".agentls/commands/greet.md"
            (insert "---\ndescription: Greet someone\nargument-hint: <name>\nmode: ask\n---\nGreet $ARGUMENTS from the e2e prompt file.\n"))
          (let ((ps (agentls--prompts)))
            (e2e-note (seq-find (lambda (p) (equal (plist-get p :name) "greet")) ps)
                      (format "agentls.prompts lists the prompt file: %S" ps)))
          (let ((prev agentls-last-result))
            (agentls-prompt "greet" "Ada")
            (e2e-note (e2e-wait (lambda () (not (eq agentls-last-result prev))) 30) "the custom command ended")
            (e2e-note (string-match-p "Hello, Ada" (agentls--str (plist-get agentls-last-result :answer)))
                      (format "the custom command reached the model with its argument: %S" (plist-get agentls-last-result :answer))))
          (let ((l (agentls-tools)))
            (e2e-note (seq-find (lambda (tl) (and (equal (plist-get tl :name) "read_file") (equal (plist-get tl :source) "built-in")))
                                (plist-get l :tools))
                      "agentls-tools lists the model's tools with their source"))
          (agentls-shutdown))))
  (error (e2e-note nil (format "test error: %S" err))))
(e2e-finish)
