;;; agentls.el --- agentls with eglot (Emacs 28+)  -*- lexical-binding: t; -*-

;; The eglot configuration of docs/editors.md, as a file you can load:
;;   (load "/path/to/agentls/editors/emacs/agentls.el")
;; Adds agentls to `eglot-server-programs' for the modes in
;; `agentls-modes' and the commands `agentls-run', `agentls-ask',
;; `agentls-cancel' and `agentls-tasks'. Code actions ("Ask agent about
;; X") come through the usual `eglot-code-actions'.

;;; Code:
(require 'eglot)
(require 'jsonrpc)

(defvar agentls-program '("agentls" "serve")
  "Command line of the agentls server.")

(defvar agentls-initialization-options '(:approval "ask" :apiKeyEnv "OPENAI_API_KEY")
  "Settings sent as initializationOptions (model, baseURL, approval, ...).")

(defvar agentls-modes '(go-mode go-ts-mode python-mode python-ts-mode js-mode typescript-ts-mode
                                rust-mode rust-ts-mode c-mode c++-mode java-mode)
  "Major modes eglot starts agentls for.")

(defvar agentls-last-result nil
  "The reply of the last agentls.run that finished (a plist).")

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               `(,agentls-modes . (,@agentls-program :initializationOptions ,agentls-initialization-options))))

(defun agentls--uri ()
  (when buffer-file-name
    (if (fboundp 'eglot-path-to-uri)
        (eglot-path-to-uri buffer-file-name)
      (eglot--path-to-uri buffer-file-name))))

(defun agentls--range ()
  (when (use-region-p)
    (list :start (eglot--pos-to-lsp-position (region-beginning))
          :end (eglot--pos-to-lsp-position (region-end)))))

(defun agentls--finish (result)
  (setq agentls-last-result result)
  (message "agentls: %s: %s" (plist-get result :status)
           (let ((s (plist-get result :summary)) (a (plist-get result :answer)))
             (cond ((and (stringp s) (not (string-empty-p s))) s)
                   ((stringp a) a)
                   (t "")))))

(defun agentls-run (prompt &optional mode)
  "Run an agentls task with PROMPT about the current buffer (and region).
MODE is \"ask\" or \"edit\"; nil lets the server decide. Does not block:
eglot shows the server's start and end messages, the result follows."
  (interactive "sagentls task: ")
  (let* ((server (eglot--current-server-or-lose))
         (args `(:prompt ,prompt
                 ,@(when mode `(:mode ,mode))
                 ,@(let ((u (agentls--uri))) (when u `(:uri ,u)))
                 ,@(let ((r (agentls--range))) (when r `(:range ,r))))))
    (jsonrpc-async-request server :workspace/executeCommand
                           `(:command "agentls.run" :arguments [,args])
                           :success-fn #'agentls--finish
                           :error-fn (lambda (e) (message "agentls: failed: %s" (plist-get e :message)))
                           :timeout 3600)))

(defun agentls-ask (question)
  "Ask QUESTION about the region or the symbol at point."
  (interactive (list (read-string "Ask agentls: " (format "Explain `%s'." (or (thing-at-point 'symbol t) "this code")))))
  (agentls-run question "ask"))

(defun agentls-tasks ()
  "List agentls tasks."
  (interactive)
  (let* ((r (eglot-execute-command (eglot--current-server-or-lose) "agentls.tasks" []))
         ;; The reply is a list of tasks (a vector); accept {tasks: [...]} too.
         (tasks (if (and (listp r) (plist-member r :tasks)) (plist-get r :tasks) r)))
    (message "%s" (mapconcat (lambda (tk)
                               (let ((plan (plist-get tk :plan)))
                                 (format "%s %-9s %s %s" (plist-get tk :id) (plist-get tk :state)
                                         (if (and plan (> (or (plist-get plan :total) 0) 0))
                                             (format "%d/%d" (plist-get plan :done) (plist-get plan :total))
                                           "   ")
                                         (plist-get tk :prompt))))
                             tasks "\n"))
    tasks))

(defun agentls-cancel (task-id)
  "Cancel the agentls task TASK-ID."
  (interactive "sTask id: ")
  (eglot-execute-command (eglot--current-server-or-lose) "agentls.cancel" (vector (list :taskId task-id))))

(provide 'agentls)
;;; agentls.el ends here
