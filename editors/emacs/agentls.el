;;; agentls.el --- agentls beside your language server  -*- lexical-binding: t; -*-

;; Version: 0.2.0
;; Package-Requires: ((emacs "28.1") (jsonrpc "1.0.14"))
;; Keywords: tools, languages
;; URL: https://github.com/agentls/agentls

;;; Commentary:

;; Load it:  (load "/path/to/agentls/editors/emacs/agentls.el") or put the
;; folder on `load-path' and let the autoloads start it: M-x agentls-run.
;; Tested on Emacs 28.2 (jsonrpc 1.0.14) and 30.1 (jsonrpc 1.0.25).  It uses
;; jsonrpc's public API only (a connection subclass with its own methods on
;; the public generics), and no eglot internals: eglot may run beside it.
;;
;; agentls runs on its own connection (Emacs's `jsonrpc' library), beside
;; the major mode's language server: eglot keeps gopls, pyright, ... and
;; agentls gets its own didOpen/didChange/didSave/didClose for the buffers
;; of the project. `agentls-mode' (global) starts it for the project of the
;; current buffer on the first command.
;;
;; Commands (task ids complete): `agentls-run', `agentls-ask',
;; `agentls-plan', `agentls-execute-plan', `agentls-cancel' (default: the
;; running task), `agentls-undo', `agentls-resume', `agentls-report',
;; `agentls-tasks'. Progress shows in the mode line; each result once: one
;; message and the whole answer in the *agentls answer* buffer. Approvals
;; ask with `completing-read' over the actions (the whole command shows).

;;; Code:
(require 'cl-lib)
(require 'jsonrpc)
(require 'project)
(require 'subr-x)
(require 'url-parse)
(require 'url-util)
(require 'flymake)
(declare-function markdown-mode "markdown-mode")
(defvar eglot-confirm-server-initiated-edits)

(defgroup agentls nil "The agentls coding agent." :group 'tools)

;; Settings trust: the program agentls starts and the settings it sends
;; (approval, allowCommands, baseURL, apiKeyEnv, checkCommand, sandbox,
;; commandNetwork, ...) widen what the agent may do or say where the API
;; key goes.  A repository can ship a .dir-locals.el, so they are read
;; with `default-value' only (the user's init, customize or a global
;; `setq'), never as a buffer-local value, and they are marked risky so
;; Emacs never applies a file-local value of theirs without asking.
(defcustom agentls-program '("agentls" "serve")
  "Command line of the agentls server.
Read from its default (global) value only: a directory-local value is
ignored."
  :type '(repeat string)
  :risky t)

(defcustom agentls-initialization-options nil
  "Settings sent as initializationOptions (model, baseURL, approval, ...).
A plist sent whole: any key of editors/contract.json's settings, e.g.
\\='(:model \"gpt-4.1\" :mcpServers (:github (:command \"github-mcp\"))).
nil sends none: the server then keeps your own settings (the environment,
~/.config/agentls/settings.json).  Read from its default (global) value
only: a directory-local value is ignored."
  :type 'sexp
  :risky t)

(defun agentls--program ()
  "The server's command line, from the user's global setting."
  (default-value 'agentls-program))

(defun agentls--settings ()
  "The settings sent to the server, from the user's global setting."
  (default-value 'agentls-initialization-options))

(defcustom agentls-confirm-edits 'default
  "Ask before the server edits buffers (workspace/applyEdit).
`default' follows `eglot-confirm-server-initiated-edits' (asks when eglot is
not loaded); t asks; nil not."
  :type '(choice (const default) (const t) (const nil)))

(defcustom agentls-show-answer t
  "Show the whole answer in the *agentls answer* buffer when a task ends."
  :type 'boolean)

(defvar agentls-last-result nil "The reply of the last task that ended (a plist).")
(defvar agentls-last-undo nil "The reply of the last `agentls-undo'.")
(defvar agentls-last-stop nil "What was said when a server stopped by itself.")
(defvar agentls--conns (make-hash-table :test #'equal) "Project root -> connection.")
(defvar agentls--progress (make-hash-table :test #'equal) "Token -> plist (:title :message :done).")
(defvar agentls--seq 0)
(defvar agentls--shown nil "The last result messages shown.")
(defvar agentls--pending nil "Tasks this Emacs started that have not replied (request ids).")
(defvar agentls--question nil "The open approval question: (ID . WITHDRAWN).")
(defvar-local agentls--version 0)
(defvar-local agentls--conn nil)
(defvar-local agentls--change-timer nil)

;;; Connection

(defclass agentls-connection (jsonrpc-process-connection)
  ((root :initarg :root :accessor agentls--root)
   (capabilities :initform nil :accessor agentls--capabilities-of)
   (process :initarg :agentls-process :accessor agentls--process-of)
   (stopping :initform nil :accessor agentls--stopping-p
             :documentation "Non-nil once `agentls-shutdown' stops it."))
  :documentation "A connection to an agentls server for one project root.")

(defun agentls--project-root (&optional dir)
  (let ((pr (project-current nil (or dir default-directory))))
    (file-name-as-directory
     (expand-file-name (if pr (if (fboundp 'project-root) (project-root pr) (with-no-warnings (car (project-roots pr))))
                         (or dir default-directory))))))

(defun agentls--uri (file)
  "The file:// URI of FILE (percent-encoded like eglot's)."
  (concat "file://"
          (url-hexify-string (expand-file-name file)
                             (cons ?/ url-unreserved-chars))))
(defun agentls--path (uri) (url-unhex-string (url-filename (url-generic-parse-url uri))))

;; LSP positions count UTF-16 code units (the protocol's default).
(defun agentls--utf16-length (s)
  (let ((n 0)) (dotimes (i (length s)) (setq n (+ n (if (> (aref s i) #xFFFF) 2 1)))) n))

(defun agentls--lsp-position (&optional pos)
  "POS (default point) as an LSP position."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (or pos (point)))
      (list :line (1- (line-number-at-pos nil t))
            :character (agentls--utf16-length (buffer-substring-no-properties (line-beginning-position) (point)))))))

(defun agentls--lsp-position-to-point (p)
  "The buffer position of the LSP position P (clamped to the buffer)."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (forward-line (plist-get p :line))
      (let ((col (plist-get p :character)) (eol (line-end-position)))
        (while (and (> col 0) (< (point) eol))
          (setq col (- col (if (> (char-after) #xFFFF) 2 1)))
          (forward-char 1))
        (point)))))

(defun agentls--apply-text-edits (edits)
  "Apply the LSP text EDITS (a vector) to the current buffer, as one undo step."
  (let ((markers (mapcar (lambda (e)
                           (let ((r (plist-get e :range)))
                             (list (copy-marker (agentls--lsp-position-to-point (plist-get r :start)))
                                   (copy-marker (agentls--lsp-position-to-point (plist-get r :end)) t)
                                   (plist-get e :newText))))
                         (append edits nil))))
    (save-excursion
      (save-restriction
        (widen)
        (atomic-change-group
          (dolist (m (reverse markers))
            (goto-char (nth 0 m))
            (delete-region (nth 0 m) (nth 1 m))
            (insert (nth 2 m))))))
    (dolist (m markers) (set-marker (nth 0 m) nil) (set-marker (nth 1 m) nil))))

(defun agentls--language-id ()
  (let ((name (symbol-name major-mode)))
    (replace-regexp-in-string "\\(-ts\\)?-mode$" "" name)))

(defun agentls--connection (&optional dir)
  "The live connection of the project of DIR, started when needed."
  (let* ((root (agentls--project-root dir))
         (conn (gethash root agentls--conns)))
    (if (and conn (jsonrpc-running-p conn))
        conn
      (agentls--start root))))

(defun agentls--capabilities ()
  (list :window (list :workDoneProgress t :showDocument (list :support t))
        :workspace (list :applyEdit t :configuration t
                         ;; Review before apply (agentls--review).
                         :workspaceEdit (list :documentChanges t
                                              :changeAnnotationSupport (list :groupsOnLabel :json-false)))
        :textDocument (list :synchronization (list :didSave t :dynamicRegistration :json-false)
                            ;; `agentls-ghost-mode' asks textDocument/inlineCompletion.
                            :inlineCompletion (list :dynamicRegistration :json-false))
        ;; The agentls/* requests `agentls--handle-request' answers: the
        ;; server sends them only to a client that lists them.
        :experimental (list :agentls (list :requests ["agentls/saveDocuments" "agentls/diagnostics" "agentls/lsp"]
                                           ;; shown while `agentls-show-answer' is on (it
                                           ;; may change after the server started)
                                           :answerStream t))))

(defun agentls--start (root)
  (let* ((default-directory root)
         (proc (make-process :name (format "agentls %s" root)
                             :command (agentls--program)
                             :connection-type 'pipe
                             :coding 'utf-8-emacs-unix
                             :noquery t
                             :stderr (get-buffer-create (format " *agentls stderr %s*" root))))
         (_ (process-put proc 'agentls-stderr (get-buffer (format " *agentls stderr %s*" root))))
         (conn (apply #'make-instance 'agentls-connection
                      :name (format "agentls %s" (file-name-nondirectory (directory-file-name root)))
                      :process proc :agentls-process proc :root root
                      :request-dispatcher #'agentls--handle-request
                      :notification-dispatcher #'agentls--handle-notification
                      :on-shutdown #'agentls--on-shutdown
                      ;; jsonrpc 1.0.24 renamed the keyword (the old one warns).
                      (if (slot-exists-p 'jsonrpc-connection '-events-buffer-config)
                          '(:events-buffer-config (:size 2000))
                        '(:events-buffer-scrollback-size 2000)))))
    (puthash root conn agentls--conns)
    (setf (agentls--capabilities-of conn)
          (plist-get
           (agentls--request conn :initialize
                     (list :processId (emacs-pid) :rootUri (agentls--uri root)
                           :clientInfo '(:name "Emacs agentls.el")
                           :workspaceFolders (vector (list :uri (agentls--uri root) :name root))
                           :capabilities (agentls--capabilities)
                           :initializationOptions (agentls--settings))
                     20)
           :capabilities))
    (jsonrpc-notify conn :initialized (make-hash-table))
    (dolist (b (buffer-list))
      (with-current-buffer b
        (when (and buffer-file-name (string-prefix-p root (expand-file-name buffer-file-name)))
          (agentls--did-open conn))))
    conn))

;;; A server that stops

(defun agentls--last-log-line (conn)
  "The last line the server CONN wrote on stderr (its log), or nil."
  (let ((b (process-get (agentls--process-of conn) 'agentls-stderr)))
    (when (buffer-live-p b)
      (with-current-buffer b
        (let ((lines (split-string (buffer-string) "\n" t "[ \t]+")))
          (car (last (seq-remove (lambda (l) (string-prefix-p "Process " l)) lines))))))))

(defun agentls--stopped-message (conn)
  "What the user reads when the server CONN has stopped."
  (let* ((proc (agentls--process-of conn))
         (status (process-status proc))
         (code (process-exit-status proc))
         (last (agentls--last-log-line conn)))
    (format "agentls stopped (%s%s); M-x agentls-resume to continue"
            (if (eq status 'signal) (format "killed by signal %d" code) (format "exit code %d" code))
            (if last (concat ", last log line: " (agentls--one-line last 200)) ""))))

(defun agentls--on-shutdown (conn)
  "CONN's server exited: forget its tasks and progress, and say so unless
`agentls-shutdown' stopped it.  The next command starts a new server."
  (remhash (agentls--root conn) agentls--conns)
  (let (gone)
    (maphash (lambda (k p) (when (eq (plist-get p :conn) conn) (push k gone))) agentls--progress)
    (dolist (k gone) (remhash k agentls--progress)))
  (setq agentls--pending (seq-remove (lambda (p) (eq (cdr-safe p) conn)) agentls--pending))
  (when agentls--question (agentls--withdraw))
  (agentls--stream-end)
  (agentls--progress-changed)
  (unless (agentls--stopping-p conn)
    (let ((msg (agentls--stopped-message conn)))
      (setq agentls-last-stop msg)
      (agentls--notify msg 'error))))

(defun agentls--supports (command)
  "Whether the server advertises COMMAND (e.g. \"agentls.result\")."
  (let ((ecp (plist-get (agentls--capabilities-of (agentls--connection)) :executeCommandProvider)))
    (and (member command (append (plist-get ecp :commands) nil)) t)))

;;;###autoload
(defun agentls-shutdown ()
  "Stop the agentls servers."
  (interactive)
  (maphash (lambda (_ c) (setf (agentls--stopping-p c) t)
             (ignore-errors (jsonrpc-request c :shutdown nil :timeout 3))
             (ignore-errors (jsonrpc-notify c :exit nil))
             (ignore-errors (jsonrpc-shutdown c)))
           agentls--conns)
  (clrhash agentls--conns))

;;; Text synchronisation (our own, beside eglot's)

(defun agentls--did-open (conn)
  ;; Again on a new server when the buffer's server has stopped (a restart
  ;; opens the project's buffers on the new one).
  (unless (and agentls--conn (jsonrpc-running-p agentls--conn))
    (setq agentls--conn conn agentls--version 0)
    (add-hook 'after-change-functions #'agentls--after-change nil t)
    (add-hook 'after-save-hook #'agentls--did-save nil t)
    (add-hook 'kill-buffer-hook #'agentls--did-close nil t)
    (jsonrpc-notify conn :textDocument/didOpen
                    (list :textDocument (list :uri (agentls--uri buffer-file-name)
                                              :languageId (agentls--language-id)
                                              :version agentls--version
                                              :text (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))))))

(defun agentls--after-change (&rest _)
  (cl-incf agentls--version)
  (unless agentls--change-timer
    (let ((buf (current-buffer)))
      (setq agentls--change-timer
            (run-at-time 0.2 nil (lambda () (when (buffer-live-p buf) (with-current-buffer buf (agentls--flush)))))))))

(defun agentls--flush ()
  "Send the buffer's pending change (the whole text) now."
  (when agentls--change-timer
    (cancel-timer agentls--change-timer)
    (setq agentls--change-timer nil)
    (when (and agentls--conn (jsonrpc-running-p agentls--conn))
      (jsonrpc-notify agentls--conn :textDocument/didChange
                      (list :textDocument (list :uri (agentls--uri buffer-file-name) :version agentls--version)
                            :contentChanges (vector (list :text (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))))))))

(defun agentls--flush-all ()
  (dolist (b (buffer-list))
    (with-current-buffer b (when agentls--conn (agentls--flush)))))

(defun agentls--did-save ()
  (agentls--flush)
  (when (and agentls--conn (jsonrpc-running-p agentls--conn))
    (jsonrpc-notify agentls--conn :textDocument/didSave
                    (list :textDocument (list :uri (agentls--uri buffer-file-name))))))

(defun agentls--did-close ()
  (when (and agentls--conn (jsonrpc-running-p agentls--conn) buffer-file-name)
    (jsonrpc-notify agentls--conn :textDocument/didClose
                    (list :textDocument (list :uri (agentls--uri buffer-file-name))))))

(defun agentls--maybe-open ()
  "Open the visited file on a running server of its project."
  (when buffer-file-name
    (let ((conn (gethash (agentls--project-root) agentls--conns)))
      (when (and conn (jsonrpc-running-p conn)) (agentls--did-open conn)))))

;;;###autoload
(define-minor-mode agentls-mode
  "Keep agentls informed of the project's buffers; progress in the mode line."
  :global t
  (if agentls-mode
      (progn (add-hook 'find-file-hook #'agentls--maybe-open)
             (unless (member '(:eval (agentls--mode-line)) global-mode-string)
               (setq global-mode-string (append global-mode-string '((:eval (agentls--mode-line)))))))
    (remove-hook 'find-file-hook #'agentls--maybe-open)
    (setq global-mode-string (delete '(:eval (agentls--mode-line)) global-mode-string))))

;;; Server -> client

;; A request answered later (an approval, a confirmed edit): its dispatcher
;; returns at once, so the process filter goes on reading (progress, a
;; $/cancelRequest that withdraws the question).  It returns an
;; `agentls--later' as its result; our connection's method on the public
;; generic `jsonrpc-connection-send' sees jsonrpc's reply carrying it, sends
;; nothing then, and runs its function from a timer with the request's id;
;; that function's answer goes out through `jsonrpc-connection-send'.  The
;; method is specialised on `agentls-connection': no other connection (eglot's)
;; is touched, and nothing private of jsonrpc's is called or advised.
(cl-defstruct (agentls--later (:constructor agentls--later (fn)))
  "A server request's answer to come: FN takes the request id and returns
\(:result X), (:error E) or nil (answer nothing)."
  fn)

(defvar agentls--sent-id nil "The id of the last request sent to a server.")

(cl-defmethod jsonrpc-connection-send :around ((conn agentls-connection) &rest args)
  "Send ARGS; a reply whose result is an `agentls--later' is answered later."
  (let ((later (plist-get args :result)))
    ;; The id of a request this Emacs sends (jsonrpc-async-request returns
    ;; none): the ghost text cancels its request by it.
    (when (and (plist-get args :method) (plist-get args :id))
      (setq agentls--sent-id (plist-get args :id)))
    (if (not (agentls--later-p later))
        (cl-call-next-method)
      (let ((id (plist-get args :id)))
        (run-at-time 0 nil
                     (lambda ()
                       (let ((reply (condition-case e (funcall (agentls--later-fn later) id)
                                      (error (list :error (list :code -32603 :message (error-message-string e)))))))
                         (when (and reply (jsonrpc-running-p conn))
                           (apply #'jsonrpc-connection-send conn :id id reply)))))))))

(defun agentls--handle-request (conn method params)
  (pcase method
    ('window/workDoneProgress/create nil)
    ('workspace/configuration
     (vconcat (mapcar (lambda (_) (agentls--settings)) (plist-get params :items))))
    ('window/showMessageRequest (agentls--later (lambda (id) (agentls--ask id params))))
    ('workspace/applyEdit (agentls--later (lambda (id) (agentls--apply-edit params conn id))))
    ('window/showDocument
     (let ((path (agentls--path (plist-get params :uri))))
       (if (file-exists-p path)
           (progn (display-buffer (find-file-noselect path)) '(:success t))
         '(:success :json-false))))
    ;; Saved from a timer, not inside the process filter: a save runs
    ;; before-save-hook, where eglot may wait on its own server (gopls),
    ;; whose answer cannot be read while this filter runs.
    ('agentls/saveDocuments (agentls--later (lambda (_id) (list :result (agentls--save-documents params)))))
    ('agentls/diagnostics (agentls--diagnostics params))
    ('agentls/lsp (agentls--forward-lsp conn params))
    (_ (signal 'jsonrpc-error `((jsonrpc-error-code . -32601) (jsonrpc-error-message . ,(format "%s not handled" method)))))))

(defun agentls--one-line (s &optional max)
  (let ((s (string-trim (replace-regexp-in-string "[ \t]*\n[ \t\n]*" " · " (or s "")))))
    (truncate-string-to-width s (or max (max 20 (- (frame-width) 10))) nil nil "…")))

(defun agentls--handle-notification (conn method params)
  (pcase method
    ('$/progress (agentls--on-progress conn params))
    ('$/cancelRequest
     (when (and agentls--question (equal (car agentls--question) (plist-get params :id)))
       (agentls--withdraw)))
    ('window/showMessage
     ;; While a task of ours runs, its info messages repeat what its reply
     ;; shows: each result is shown once.
     ;; (the reply follows at once: wait for it, then show what it did not).
     ;; Info is dropped then; a warning waits for the reply and shows
     ;; unless the result said the same.
     (let ((msg (agentls--one-line (plist-get params :message)))
           (type (or (plist-get params :type) 3)))
       (cond ((not agentls--pending) (message "%s" msg))
             ((< type 3) (agentls--show-after-reply msg (+ (float-time) 10))))))
    ('window/logMessage nil)
    ('agentls/answer (agentls--on-answer params))
    (_ nil)))

(defun agentls--show-after-reply (msg deadline)
  (if (and agentls--pending (< (float-time) deadline))
      (run-at-time 0.2 nil #'agentls--show-after-reply msg deadline)
    ;; Shown once: not again when a result already said it (the server's
    ;; message repeats the summary after the task's prompt).
    (unless (or (member msg agentls--shown)
                (seq-some (lambda (shown) (string-search (string-remove-prefix "agentls: " shown) msg)) agentls--shown))
      (message "%s" msg))))

(defun agentls--withdraw ()
  "Close the open approval question without an answer."
  (setcdr agentls--question t)
  ;; Not from here: a throw out of the process filter would drop the
  ;; messages that came with this one. A timer runs in the minibuffer's
  ;; wait for input.
  (let ((q agentls--question))
    (run-at-time 0 nil (lambda ()
                         (when (and (eq q agentls--question) (active-minibuffer-window))
                           (abort-recursive-edit))))))

(defun agentls--ask (id params)
  "The approval question: `completing-read' over the actions. An empty
answer or C-g asks again; withdrawn (no answer) on $/cancelRequest."
  (let* ((actions (append (plist-get params :actions) nil))
         (titles (mapcar (lambda (a) (plist-get a :title)) actions))
         (q (cons id nil))
         (choice nil))
    (setq agentls--question q)
    (unwind-protect
        (while (and (not choice) (not (cdr q)))
          (let ((answer (condition-case nil
                            ;; The user may be in the minibuffer already (M-x).
                            (let ((inhibit-quit nil) (enable-recursive-minibuffers t))
                              (completing-read (concat (agentls--one-line (plist-get params :message) 1000)
                                                       "\nChoose (" (mapconcat #'identity titles ", ") "): ")
                                               titles nil t))
                          (quit nil))))
            (when (member answer titles) (setq choice answer))
            (unless (or choice (cdr q)) (message "agentls: choose an action (Deny is one)") (sit-for 0.5))))
      (setq agentls--question nil))
    (cond ((cdr q) nil)                 ; withdrawn: answer nothing
          (t (list :result (seq-find (lambda (a) (equal (plist-get a :title) choice)) actions))))))

(defun agentls--confirm-edits-p ()
  (if (eq agentls-confirm-edits 'default)
      ;; eglot's setting when eglot is loaded, else ask (its default).
      (if (boundp 'eglot-confirm-server-initiated-edits) eglot-confirm-server-initiated-edits t)
    agentls-confirm-edits))

(defun agentls--apply-edit (params &optional conn id)
  "Apply the workspace edit of PARAMS; its answer.
An edit whose change annotations ask for confirmation is reviewed per
hunk (`agentls--review'): answered later on CONN to request ID."
  (if (and conn (agentls--review-needed-p (plist-get params :edit)))
      (progn (agentls--review params (lambda (reply)
                                       (when (jsonrpc-running-p conn)
                                         (apply #'jsonrpc-connection-send conn :id id reply)))
                              (lambda () (jsonrpc-running-p conn)))
             nil)
    (agentls--apply-edit-whole params)))

(defvar agentls--undo-asked nil
  "Non-nil while an undo the user asked for (`agentls-undo') runs: its
edit is what the user just chose, so it is not confirmed again.")

(defun agentls--apply-edit-whole (params)
  "Apply the whole workspace edit of PARAMS (asking first when
`agentls-confirm-edits' says so); its answer."
  (let* ((edit (plist-get params :edit))
         (prepared nil))
    (mapc (lambda (dc) (push (cons (agentls--path (plist-get (plist-get dc :textDocument) :uri)) (plist-get dc :edits)) prepared))
          (plist-get edit :documentChanges))
    (cl-loop for (uri edits) on (plist-get edit :changes) by #'cddr
             do (push (cons (agentls--path (substring (symbol-name uri) 1)) edits) prepared))
    (if (and (agentls--confirm-edits-p)
             (not agentls--undo-asked)
             (not (y-or-n-p (format "agentls wants to edit %s. Proceed? "
                                    (mapconcat #'file-name-nondirectory (mapcar #'car prepared) ", ")))))
        (list :result (list :applied :json-false :failureReason "the user declined"))
      (dolist (p prepared)
        (with-current-buffer (find-file-noselect (car p))
          (agentls--apply-text-edits (cdr p))
          (agentls--flush)))
      (list :result (list :applied t)))))

(defun agentls--save-documents (params)
  (let (saved failed)
    (mapc (lambda (uri)
            (let ((b (find-buffer-visiting (agentls--path uri))))
              (if (not (and b (buffer-modified-p b)))
                  (push uri saved)
                (condition-case e
                    (with-current-buffer b
                      ;; No question may stop the server: a prompt is a "no".
                      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) nil))
                                ((symbol-function 'y-or-n-p) (lambda (&rest _) nil)))
                        (let ((inhibit-message t)) (basic-save-buffer)))
                      (if (buffer-modified-p) (push (list :uri uri :reason "not saved") failed) (push uri saved)))
                  (error (push (list :uri uri :reason (error-message-string e)) failed))))))
          (plist-get params :uris))
    (list :saved (vconcat (nreverse saved)) :failed (vconcat (nreverse failed)))))

(defun agentls--severity (type)
  (let ((n (symbol-name type)))
    (cond ((string-match-p "error" n) 1) ((string-match-p "warning" n) 2) ((string-match-p "note" n) 3) (t 4))))

(defun agentls--diagnostics (params)
  "Flymake's diagnostics of the listed documents (all for none).
A listed file no buffer visits is answered empty and unchecked: nothing
in this Emacs checks it."
  (let* ((uris (append (plist-get params :uris) nil))
         (targets (if uris
                      (mapcar (lambda (u) (or (find-buffer-visiting (agentls--path u)) u)) uris)
                    (seq-filter (lambda (b) (with-current-buffer b (and buffer-file-name (bound-and-true-p flymake-mode) (flymake-diagnostics))))
                                (buffer-list)))))
    (vconcat
     (mapcar (lambda (target)
               (with-current-buffer (if (bufferp target) target (current-buffer))
                 (let ((b (and (bufferp target) target)))
                   ;; No :version: flymake does not say which text its
                   ;; diagnostics are for, and the buffer's version would tell
                   ;; the server they are current before the backend ran.
                   (list :uri (if b (agentls--uri buffer-file-name) target)
                         ;; Nothing checks a buffer without a running flymake
                         ;; backend (eglot's, ...): the server does not wait.
                         :checked (if (and b (bound-and-true-p flymake-mode) (flymake-running-backends)) t :json-false)
                         :diagnostics
                         (vconcat (mapcar (lambda (d)
                                            (list :range (list :start (agentls--lsp-position (flymake-diagnostic-beg d))
                                                               :end (agentls--lsp-position (flymake-diagnostic-end d)))
                                                  :severity (agentls--severity (flymake-diagnostic-type d))
                                                  :source (format "%s" (flymake-diagnostic-backend d))
                                                  :message (flymake-diagnostic-text d)))
                                          (and b (bound-and-true-p flymake-mode) (flymake-diagnostics))))))))
             targets))))

;;; Forwarding to the buffer's own language server

(defvar agentls--lsp-unsupported (make-hash-table :test #'equal)
  "(SERVER-NAME . METHOD) pairs that answered MethodNotFound: not asked again.")

(defun agentls--lsp-forward (params then)
  "Send PARAMS' request ({:method :params}) to the eglot server of its
document (visiting the file when no buffer does) and call THEN with its
result, or with nil when no server serves it (none, MethodNotFound, an
error, or no answer within 10 s)."
  (let* ((method (plist-get params :method))
         (p (plist-get params :params))
         (uri (plist-get (plist-get p :textDocument) :uri))
         (buf (and uri (let ((path (agentls--path uri)))
                         (and (file-exists-p path) (find-file-noselect path)))))
         (server (and buf (fboundp 'eglot-current-server)
                      (with-current-buffer buf (eglot-current-server))))
         (key (and server (cons (jsonrpc-name server) method))))
    (if (or (null server) (gethash key agentls--lsp-unsupported))
        (run-at-time 0 nil then nil)
      (jsonrpc-async-request
       server (intern (concat ":" method)) p
       :success-fn then
       :error-fn (lambda (err)
                   (when (eql (plist-get err :code) -32601)
                     (puthash key t agentls--lsp-unsupported))
                   (funcall then nil))
       :timeout-fn (lambda () (funcall then nil))
       :timeout 10))))

(defun agentls--forward-lsp (conn params)
  "Answer agentls/lsp on CONN later, with `agentls--lsp-forward'."
  (agentls--later
   (lambda (id)
     (agentls--lsp-forward params (lambda (result)
                                    (when (jsonrpc-running-p conn)
                                      (jsonrpc-connection-send conn :id id :result result))))
     ;; Answered by the callback, not by this function's value.
     nil)))

;;; Progress

(defvar agentls--tick-timer nil "Redraws the mode line every second while a task runs.")

(defun agentls--progress-changed ()
  "Redraw the mode line; tick every second while any task runs."
  (if (> (hash-table-count agentls--progress) 0)
      (unless agentls--tick-timer
        (setq agentls--tick-timer (run-at-time 1 1 #'force-mode-line-update t)))
    (when agentls--tick-timer
      (cancel-timer agentls--tick-timer)
      (setq agentls--tick-timer nil)))
  (force-mode-line-update t))

(defun agentls--on-progress (conn params)
  (let* ((token (format "%s" (plist-get params :token)))
         (v (plist-get params :value))
         (p (gethash token agentls--progress)))
    (pcase (plist-get v :kind)
      ("begin" (setq p (list :title (plist-get v :title) :message (plist-get v :message)
                             :token (plist-get params :token) :conn conn :start (float-time))))
      ("end" (setq p nil))
      (_ (when (and p (plist-get v :message)) (setq p (plist-put p :message (plist-get v :message))))))
    ;; The phase (the activity without the server's counters) and when it
    ;; began, for "running go vet ./... (9 s)".
    (when p
      (let ((phase (agentls--phase-of (plist-get p :message))))
        (unless (equal phase (plist-get p :phase))
          (setq p (plist-put (plist-put p :phase phase) :phase-start (float-time))))))
    (if p (puthash token p agentls--progress) (remhash token agentls--progress))
    ;; A question left open when every task has ended is withdrawn (for a
    ;; server that does not send $/cancelRequest).
    (when (and agentls--question (= 0 (hash-table-count agentls--progress)))
      (agentls--withdraw))
    (agentls--progress-changed)))

(defun agentls--phase-of (message)
  "The activity of a progress MESSAGE: its first line without counters."
  (replace-regexp-in-string " · turn .*\\'" "" (car (split-string (or message "") "\n"))))

(defun agentls--elapsed (start)
  (let ((s (floor (- (float-time) start))))
    (if (< s 60) (format "%d s" s) (format "%d min %02d s" (/ s 60) (% s 60)))))

(defun agentls--mode-line ()
  "The mode line item: the running tasks' activity, plan progress and the
time since each began (ticking every second)."
  (let (parts)
    (maphash (lambda (_ p)
               (let* ((lines (split-string (or (plist-get p :message) "") "\n" t))
                      (items (seq-filter (lambda (l) (string-match-p "^\\s-*\\[[x >-]\\]" l)) lines))
                      (done (seq-count (lambda (l) (string-match-p "^\\s-*\\[[x-]\\]" l)) items))
                      ;; The server's own " · N s" is as old as its last report.
                      (phase (or (plist-get p :phase) ""))
                      (secs (floor (- (float-time) (or (plist-get p :phase-start) (float-time)))))
                      (activity (if (string-empty-p phase) (or (plist-get p :title) "")
                                  (if (>= secs 2) (format "%s (%d s)" phase secs) phase))))
                 (push (concat "agentls" (if items (format " %d/%d" done (length items)) "")
                               ": " (agentls--one-line activity 50)
                               " · " (agentls--elapsed (plist-get p :start)))
                       parts)))
             agentls--progress)
    (if parts (concat " [" (string-join parts " | ") "]") "")))

(defun agentls--notify (msg &optional level)
  "Say MSG once, whole (several lines when it has them).  An error is
also kept at the top of *agentls answer*, where the next message does not
overwrite it."
  (message "%s" msg)
  (when (eq level 'error)
    (with-current-buffer (get-buffer-create "*agentls answer*")
      (let ((inhibit-read-only t))
        (goto-char (point-min))
        (insert (format-time-string "[%H:%M:%S] ") msg "\n\n"))
      (setq buffer-read-only t))
    (display-buffer "*agentls answer*")))

;;; Streamed answers

(defvar agentls--streaming nil
  "The task whose answer *agentls answer* shows as it is written, or nil.")

(defun agentls--on-answer (params)
  "An agentls/answer notification (PARAMS :taskId, :text, :done): the
answer as the model writes it.  *agentls answer* shows it from the first
part and grows, its end kept in view; the task's reply then replaces it
with the whole result (`agentls--show-result')."
  (let ((id (agentls--str (plist-get params :taskId)))
        (text (agentls--str (plist-get params :text))))
    (when (and agentls-show-answer (or (equal id agentls--streaming) (not (string-empty-p text))))
      (with-current-buffer (get-buffer-create "*agentls answer*")
        (let ((inhibit-read-only t))
          (unless (equal id agentls--streaming)
            (setq agentls--streaming id)
            (erase-buffer)
            (if (require 'markdown-mode nil t) (markdown-mode) (text-mode))
            (visual-line-mode 1)
            (local-set-key "q" #'quit-window)
            (insert (format "# agentls task %s: writing the answer…\n\n" id)))
          (goto-char (point-max))
          (insert text)
          (when (eq (plist-get params :done) t)
            (save-excursion
              (goto-char (point-min))
              (when (search-forward ": writing the answer…" (line-end-position) t)
                (replace-match ": answer written" t t)))))
        (setq buffer-read-only t)
        (let ((win (display-buffer (current-buffer))))
          (when win (set-window-point win (point-max))))))))

(defun agentls--stream-end (&optional status)
  "The streamed answer ends: the reply (or a stopped server) takes over.
Its header says STATUS (or \"ended\") instead of \"writing the answer\"
when the reply does not replace the text (a cancelled task)."
  (when agentls--streaming
    (let ((b (get-buffer "*agentls answer*")))
      (when (buffer-live-p b)
        (with-current-buffer b
          (let ((inhibit-read-only t))
            (save-excursion
              (goto-char (point-min))
              (when (re-search-forward ": \\(writing the answer…\\|answer written\\)$" (line-end-position) t)
                (replace-match (concat ": " (or status "ended")) t t))))))))
  (setq agentls--streaming nil))

;;; Results

(defun agentls--str (v) (if (stringp v) v ""))

(defun agentls--show-result (r)
  "One message and the whole answer in *agentls answer*."
  (setq agentls-last-result r)
  (agentls--stream-end (agentls--str (plist-get r :status)))
  (let* ((status (agentls--str (plist-get r :status)))
         (summary (agentls--str (plist-get r :summary)))
         (answer (agentls--str (plist-get r :answer)))
         (plan (plist-get r :plan)))
    ;; A failure is said whole (the echo area grows to its lines): the
    ;; service's words and the fix must be readable.
    (let ((msg (format "agentls: %s" (if (equal status "failed")
                                         (string-trim (if (string-empty-p summary) status summary))
                                       (agentls--one-line (if (string-empty-p summary) status summary))))))
      (push msg agentls--shown)
      (setq agentls--shown (seq-take agentls--shown 10))
      (message "%s" msg))
    (when (and agentls-show-answer (not (equal status "cancelled")))
      (with-current-buffer (get-buffer-create "*agentls answer*")
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (format "# agentls task %s: %s\n\n" (agentls--str (plist-get r :taskId)) status))
          (unless (or (string-empty-p summary) (equal summary answer)) (insert summary "\n\n"))
          (unless (string-empty-p answer) (insert answer "\n\n"))
          (when (and plan (plist-get plan :items))
            (insert "## Plan\n")
            (mapc (lambda (it) (insert (format "- [%s] %s\n" (pcase (plist-get it :status) ("done" "x") ("skipped" "-") ("in_progress" ">") (_ " "))
                                               (plist-get it :text))))
                  (plist-get plan :items))
            (insert "\n"))
          (let ((files (append (plist-get r :changedFiles) nil)))
            (when files (insert "Changed: " (string-join files ", ") "\n")))
          (when (equal (plist-get r :mode) "plan")
            (insert "\nExecute this plan: M-x agentls-execute-plan\n"))
          (when (stringp (plist-get r :report))
            (insert "Report: " (agentls--path (plist-get r :report)) "\n")))
        (if (require 'markdown-mode nil t) (markdown-mode) (text-mode))
        (visual-line-mode 1)
        (setq buffer-read-only t)
        (local-set-key "q" #'quit-window)
        (goto-char (point-min)))
      (display-buffer "*agentls answer*"))))

(defun agentls--request (conn method params timeout)
  "Send METHOD with PARAMS on CONN and wait up to TIMEOUT s for its reply.
`jsonrpc-async-request' plus a wait that reads output, not
`jsonrpc-request': its reply arrives without a throw out of the process
filter, so messages read with it (a task's progress end, its result) are
handled at once.  Signals `error' on an error reply, a timeout or a
stopped server."
  (let ((done nil) (deadline (+ (float-time) timeout)))
    (jsonrpc-async-request conn method params
                           :success-fn (lambda (r) (setq done (list :result r)))
                           :error-fn (lambda (e) (setq done (list :error e)))
                           :timeout-fn (lambda () (setq done (list :error '(:message "no reply in time"))))
                           :timeout timeout)
    (while (and (not done) (< (float-time) deadline))
      (unless (jsonrpc-running-p conn)
        (setq done (list :error (list :message (agentls--stopped-message conn)))))
      (accept-process-output nil 0.05))
    (cond ((plist-member done :result) (plist-get done :result))
          (done (error "agentls: %s" (agentls--str (plist-get (plist-get done :error) :message))))
          (t (error "agentls: no reply to %s in %ss" method timeout)))))

(defun agentls--exec (command arg &optional timeout)
  "executeCommand COMMAND with ARG; its reply."
  (let ((conn (agentls--connection)))
    (agentls--flush-all)
    (agentls--request conn :workspace/executeCommand
                      (list :command command :arguments (if arg (vector arg) []))
                      (or timeout 10))))

(defun agentls--region-range ()
  (when (use-region-p)
    (list :start (agentls--lsp-position (region-beginning))
          :end (agentls--lsp-position (region-end)))))

(defun agentls--task (command args)
  "Start a task command (agentls.run, agentls.resume); shows its result."
  (let* ((conn (agentls--connection))
         (mode (plist-get args :mode)))
    (when buffer-file-name (agentls--did-open conn))
    (agentls--flush-all)
    (cl-incf agentls--seq)
    (let ((me (cons agentls--seq conn)))
    (push me agentls--pending)
    (jsonrpc-async-request conn :workspace/executeCommand
                           (list :command command :arguments (vector args))
                           :success-fn (lambda (r)
                                         (setq agentls--pending (delq me agentls--pending))
                                         (unless (plist-get r :mode) (setq r (plist-put r :mode mode)))
                                         (agentls--show-result r))
                           :error-fn (lambda (e)
                                       (setq agentls--pending (delq me agentls--pending))
                                       ;; A stopped server is said once, by `agentls--on-shutdown'.
                                       (when (jsonrpc-running-p conn)
                                         (agentls--notify (format "agentls: failed: %s" (agentls--str (plist-get e :message))) 'error)))
                           :timeout nil))
    (message "agentls: started: %s" (agentls--one-line (or (plist-get args :prompt) (plist-get args :taskId)) 60))))

;;;###autoload
(defun agentls-run (prompt &optional mode)
  "Run an agentls task with PROMPT about the current buffer (and region).
MODE is \"ask\", \"edit\" or \"plan\"; nil lets the server decide."
  (interactive "sagentls task: ")
  (agentls--task "agentls.run"
                 `(:prompt ,prompt ,@(when mode `(:mode ,mode))
                           ,@(when buffer-file-name `(:uri ,(agentls--uri buffer-file-name)))
                           ,@(let ((r (agentls--region-range))) (when r `(:range ,r))))))

;;;###autoload
(defun agentls-ask (question)
  "Ask QUESTION about the region or the symbol at point."
  (interactive (list (read-string "Ask agentls: " (format "Explain `%s'." (or (thing-at-point 'symbol t) "this code")))))
  (agentls-run question "ask"))

;;;###autoload
(defun agentls-plan (prompt)
  "Plan PROMPT without editing; then `agentls-execute-plan'."
  (interactive "sagentls plan: ")
  (agentls-run prompt "plan"))

;;; Task ids

(defun agentls--tasks ()
  (let ((r (agentls--exec "agentls.tasks" nil 5)))
    (append (if (and (listp r) (plist-member r :tasks)) (plist-get r :tasks) r) nil)))

(defun agentls--state (tk)
  "The state of task TK as listed: interrupted and undone tasks say so."
  (cond ((eq (plist-get tk :interrupted) t) "interrupted")
        ((eq (plist-get tk :undone) t) "undone")
        (t (agentls--str (plist-get tk :state)))))

(defun agentls--read-task (prompt &optional pred default)
  "Read a task id with completion (annotated with state and prompt)."
  (let* ((tasks (seq-filter (or pred #'identity) (agentls--tasks)))
         (table (mapcar (lambda (tk) (cons (plist-get tk :id) tk)) tasks))
         (default (or default (caar table)))
         (completion-extra-properties
          (list :annotation-function
                (lambda (id) (let ((tk (cdr (assoc id table))))
                               (format "  %-11s %s" (agentls--state tk) (agentls--one-line (agentls--str (plist-get tk :prompt)) 60)))))))
    (unless table (user-error "agentls: no such task (M-x agentls-tasks lists them)"))
    (completing-read (format "%s (default %s): " prompt default) table nil t nil nil default)))

;;;###autoload
(defun agentls-cancel (task-id)
  "Cancel TASK-ID (default: the running task)."
  (interactive (list (agentls--read-task "Cancel task" (lambda (tk) (member (agentls--state tk) '("running" "planning" "executing" "validating" "queued"))))))
  ;; Said first: the task's result may arrive while the request waits.
  (message "agentls: cancelling %s" task-id)
  (agentls--exec "agentls.cancel" (list :taskId task-id)))

;;;###autoload
(defun agentls-undo (task-id)
  "Revert every edit of TASK-ID (default: the newest edit task)."
  (interactive (list (agentls--read-task "Undo task" (lambda (tk) (equal (plist-get tk :mode) "edit"))
                                         (and agentls-last-result (append (plist-get agentls-last-result :changedFiles) nil)
                                              (plist-get agentls-last-result :taskId)))))
  (let ((r (let ((agentls--undo-asked t))
             (agentls--exec "agentls.undo" (list :taskId task-id) 30))))
    (setq agentls-last-undo r)
    (message "agentls: %s" (agentls--one-line (agentls--str (plist-get r :summary))))))

;;;###autoload
(defun agentls-resume (task-id)
  "Continue the interrupted TASK-ID."
  (interactive (list (agentls--read-task "Resume task" (lambda (tk) (equal (agentls--state tk) "interrupted")))))
  (agentls--task "agentls.resume" (list :taskId task-id)))

;;;###autoload
(defun agentls-execute-plan (task-id)
  "Execute the plan of TASK-ID (default: the last plan)."
  (interactive (list (agentls--read-task "Execute plan of task" (lambda (tk) (equal (plist-get tk :mode) "plan"))
                                         (and agentls-last-result (equal (plist-get agentls-last-result :mode) "plan")
                                              (plist-get agentls-last-result :taskId)))))
  (agentls--task "agentls.run" (list :prompt "go ahead" :mode "edit" :followUp task-id)))

;;;###autoload
(defun agentls-report (task-id)
  "Show TASK-ID's whole answer (agentls.result) or its report file."
  (interactive (list (agentls--read-task "Report of task" nil (and agentls-last-result (plist-get agentls-last-result :taskId)))))
  (let ((r (and (agentls--supports "agentls.result")
                (agentls--exec "agentls.result" (list :taskId task-id) 10))))
    (if r
        (agentls--show-result r)
      (let* ((rep (agentls--exec "agentls.showReport" (list :taskId task-id) 10))
             (path (and (stringp (plist-get rep :report)) (agentls--path (plist-get rep :report)))))
        (when (and path (not (eq (plist-get rep :shown) t)))
          (display-buffer (find-file-noselect path)))))))

;;;###autoload
(defun agentls-tasks ()
  "List the tasks, earlier sessions too, in *agentls tasks*."
  (interactive)
  (let ((tasks (agentls--tasks)))
    (with-current-buffer (get-buffer-create "*agentls tasks*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert "agentls tasks\n\n")
        (dolist (tk tasks)
          (let ((plan (plist-get tk :plan)))
            (insert (format "%s  %-11s %5s  %s\n" (plist-get tk :id) (agentls--state tk)
                            (if (and plan (> (or (plist-get plan :total) 0) 0))
                                (format "%d/%d" (plist-get plan :done) (plist-get plan :total)) "")
                            (agentls--one-line (agentls--str (plist-get tk :prompt)) 70))))))
      (special-mode))
    (display-buffer "*agentls tasks*")
    tasks))

;;; Custom commands and the tools listing

(defun agentls--prompts ()
  "The custom commands (agentls.prompts): a list of plists."
  (append (agentls--exec "agentls.prompts" nil 5) nil))

(defun agentls-prompt (name args)
  "Run the custom command NAME (a prompt file) with ARGS on the buffer.
The region, when active, is the selection its $SELECTION takes.
Interactively, pick NAME and give ARGS when the command has a hint."
  (interactive
   (let* ((ps (agentls--prompts))
          (names (mapcar (lambda (p) (plist-get p :name)) ps))
          (_ (unless names (user-error "agentls: no custom commands (add Markdown files to .agentls/commands/)")))
          (name (completing-read "agentls command: /" names nil t))
          (p (seq-find (lambda (p) (equal (plist-get p :name) name)) ps))
          (hint (agentls--str (plist-get p :argumentHint))))
     (list name (if (string-empty-p hint) "" (read-string (format "/%s %s: " name hint))))))
  (let* ((p (seq-find (lambda (p) (equal (plist-get p :name) name)) (agentls--prompts)))
         (mode (and p (agentls--str (plist-get p :mode)))))
    (unless p (user-error "agentls: no custom command /%s" name))
    (agentls-run (string-trim (format "/%s %s" name (or args "")))
                 (unless (string-empty-p mode) mode))))

(defun agentls-tools ()
  "List every tool the model has, with its source, and every hook."
  (interactive)
  (let ((l (agentls--exec "agentls.tools" nil 10)))
    (with-current-buffer (get-buffer-create "*agentls tools*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert "Tools the model has\n\n")
        (seq-doseq (tl (plist-get l :tools))
          (insert (format "%-16s %-16s %s\n" (plist-get tl :name) (plist-get tl :source)
                          (agentls--one-line (agentls--str (plist-get tl :description)) 70))))
        (insert "\nHooks\n\n")
        (when (seq-empty-p (plist-get l :hooks)) (insert "none\n"))
        (seq-doseq (h (plist-get l :hooks))
          (insert (format "%s %s: %s (timeout %s)\n" (plist-get h :event) (agentls--str (plist-get h :matcher))
                          (plist-get h :command) (plist-get h :timeout)))))
      (special-mode))
    (display-buffer "*agentls tools*")
    l))

;;; Review before apply

;; Under the server's `review' setting a workspace/applyEdit carries LSP
;; 3.16 change annotations: each hunk's text edits name an annotation with
;; needsConfirmation.  The *agentls review* buffer (diff-mode) shows the
;; hunks; the user accepts or rejects each, and only the accepted edits are
;; applied.  The answer goes out when the review ends, from the buffer's
;; commands: the process filter never waits for the user.

(defvar diff-mode-shared-map)
(declare-function diff-mode "diff-mode")

(cl-defstruct (agentls--rhunk (:constructor agentls--rhunk-make))
  doc edits file line old new label description decision)

(cl-defstruct (agentls--rdoc (:constructor agentls--rdoc-make))
  path version auto accepted)

(defvar-local agentls--review-state nil
  "The open review: a plist (:hunks :docs :reply :title :timer :config).")

(defun agentls--review-needed-p (edit)
  "Whether EDIT has a change annotation with needsConfirmation."
  (let ((anns (plist-get edit :changeAnnotations)) found)
    (cl-loop for (_ a) on anns by #'cddr
             when (eq (plist-get a :needsConfirmation) t) do (setq found t))
    found))

(defun agentls--review-hunk-text (path edits)
  "The first line (0-based), old lines and new lines of the lines EDITS
touch in the file PATH (its buffer's text)."
  (let* ((first most-positive-fixnum) (last -1))
    (seq-doseq (e edits)
      (let* ((r (plist-get e :range)) (s (plist-get r :start)) (en (plist-get r :end)))
        (setq first (min first (plist-get s :line)))
        ;; An end at the start of a line (a whole-line edit) does not touch it.
        (setq last (max last (if (and (= 0 (plist-get en :character)) (> (plist-get en :line) (plist-get s :line)))
                                 (1- (plist-get en :line))
                               (plist-get en :line))))))
    (let* ((text (with-current-buffer (find-file-noselect path)
                   (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max)))))
           (lines-of (lambda (from to)
                       (let ((all (split-string (buffer-string) "\n")))
                         (seq-subseq all (min from (length all)) (min (1+ to) (length all))))))
           old new)
      (with-temp-buffer
        (insert text)
        (unless (and (> (buffer-size) 0) (eq (char-before (point-max)) ?\n)) (insert "\n"))
        (let ((before (count-lines (point-min) (point-max))))
          (setq old (funcall lines-of first last))
          (agentls--apply-text-edits edits)
          (unless (and (> (buffer-size) 0) (eq (char-before (point-max)) ?\n)) (goto-char (point-max)) (insert "\n"))
          (let ((delta (- (count-lines (point-min) (point-max)) before)))
            (setq new (if (< (+ last delta) first) nil (funcall lines-of first (+ last delta)))))))
      (list first old new))))

(defun agentls--review-items (edit)
  "The hunks (a list of `agentls--rhunk') and documents of EDIT.
Signals an error for file operations (create, rename, delete)."
  (let* ((anns (plist-get edit :changeAnnotations))
         (ann (lambda (id) (and (stringp id) (plist-get anns (intern (concat ":" id))))))
         (confirm (lambda (id) (eq (plist-get (funcall ann id) :needsConfirmation) t)))
         docs hunks)
    (seq-doseq (dc (plist-get edit :documentChanges))
      (when (plist-get dc :kind)
        (error "file operations (%s) cannot be reviewed" (plist-get dc :kind)))
      (let ((td (plist-get dc :textDocument)))
        (push (list (agentls--path (plist-get td :uri)) (plist-get td :version) (plist-get dc :edits)) docs)))
    (cl-loop for (uri edits) on (plist-get edit :changes) by #'cddr
             do (push (list (agentls--path (substring (symbol-name uri) 1)) nil edits) docs))
    (setq docs
          (mapcar (lambda (d)
                    (let ((doc (agentls--rdoc-make :path (nth 0 d) :version (nth 1 d)))
                          (groups nil))
                      (seq-doseq (te (nth 2 d))
                        (let ((id (plist-get te :annotationId)))
                          (if (funcall confirm id)
                              (let ((g (assoc id groups)))
                                (if g (setcdr g (append (cdr g) (list te))) (push (list id te) groups)))
                            (push te (agentls--rdoc-auto doc)))))
                      (dolist (g (reverse groups))
                        (let* ((a (funcall ann (car g)))
                               (ht (agentls--review-hunk-text (agentls--rdoc-path doc) (cdr g))))
                          (push (agentls--rhunk-make :doc doc :edits (cdr g)
                                                     :file (file-relative-name (agentls--rdoc-path doc)
                                                                               (agentls--project-root (file-name-directory (agentls--rdoc-path doc))))
                                                     :line (1+ (nth 0 ht)) :old (nth 1 ht) :new (nth 2 ht)
                                                     :label (agentls--str (plist-get a :label))
                                                     :description (agentls--str (plist-get a :description)))
                                hunks)))
                      doc))
                  (nreverse docs)))
    (list (nreverse hunks) docs)))

(defconst agentls--review-keys
  "a accept · r reject · A accept all · R reject all · n/p move · C-c C-c or q finish"
  "The keys of the review buffer, shown in its header line.")

(defvar agentls-review-mode-map
  (let ((m (make-sparse-keymap)))
    (define-key m "a" #'agentls-review-accept)
    (define-key m "r" #'agentls-review-reject)
    (define-key m "A" #'agentls-review-accept-all)
    (define-key m "R" #'agentls-review-reject-all)
    (define-key m "n" #'agentls-review-next)
    (define-key m "p" #'agentls-review-previous)
    (define-key m "q" #'agentls-review-finish)
    (define-key m (kbd "C-c C-c") #'agentls-review-finish)
    (define-key m (kbd "C-c C-k") #'agentls-review-reject-all)
    m)
  "Keys of the *agentls review* buffer.")

(define-minor-mode agentls-review-mode
  "Review agentls's edit hunk by hunk: \\{agentls-review-mode-map}"
  :lighter " Review")

(defun agentls--review-render (cur)
  "Draw the review buffer (the current one) with hunk CUR (0-based) selected."
  (let* ((st agentls--review-state)
         (hunks (plist-get st :hunks))
         (inhibit-read-only t)
         (n (length hunks))
         (last-file nil)
         cur-pos)
    (erase-buffer)
    (insert (plist-get st :title) "\n"
            "Only the hunks you accept are applied; finishing rejects the undecided ones.\n\n")
    (cl-loop for h in hunks for i from 0 do
             (let ((start (point)))
               (unless (equal (agentls--rhunk-file h) last-file)
                 (setq last-file (agentls--rhunk-file h))
                 (insert "--- a/" last-file "\n+++ b/" last-file "\n"))
               (when (= i cur) (setq cur-pos (point)))
               (insert (format "@@ -%d,%d +%d,%d @@ %s %d/%d %s:%d%s\n"
                               (agentls--rhunk-line h) (length (agentls--rhunk-old h))
                               (agentls--rhunk-line h) (length (agentls--rhunk-new h))
                               (pcase (agentls--rhunk-decision h) ('accept "[+] accept") ('reject "[-] reject") (_ "[ ] undecided"))
                               (1+ i) n (agentls--rhunk-file h) (agentls--rhunk-line h)
                               (let ((d (if (string-empty-p (agentls--rhunk-description h)) (agentls--rhunk-label h)
                                          (agentls--rhunk-description h))))
                                 (if (string-empty-p d) "" (concat "  " (car (split-string d "\n")))))))
               (dolist (l (agentls--rhunk-old h)) (insert "-" l "\n"))
               (dolist (l (agentls--rhunk-new h)) (insert "+" l "\n"))
               (put-text-property start (point) 'agentls-review-hunk i)))
    (goto-char (or cur-pos (point-min)))
    ;; The title and the keys stay in view when the hunk fits below them.
    (let ((w (get-buffer-window (current-buffer))))
      (when w
        (set-window-start w (point-min))
        (set-window-point w (point))))))

(defun agentls--review-current ()
  "The index of the hunk at point (the first when point is above them)."
  (or (get-text-property (point) 'agentls-review-hunk)
      (and (> (point) (point-min)) (get-text-property (1- (point)) 'agentls-review-hunk))
      0))

(defun agentls--review-decide (decision &optional all)
  "Mark the hunk at point (ALL: every undecided hunk) with DECISION; go
to the next undecided hunk, or finish when none is left."
  (let* ((hunks (plist-get agentls--review-state :hunks))
         (i (agentls--review-current)))
    (if all
        (dolist (h hunks) (unless (agentls--rhunk-decision h) (setf (agentls--rhunk-decision h) decision)))
      (setf (agentls--rhunk-decision (nth i hunks)) decision))
    (let ((next (or (cl-loop for j from (1+ i) below (length hunks)
                             unless (agentls--rhunk-decision (nth j hunks)) return j)
                    (cl-loop for j from 0 below (length hunks)
                             unless (agentls--rhunk-decision (nth j hunks)) return j))))
      (if next (agentls--review-render next) (agentls-review-finish)))))

(defun agentls-review-accept () "Accept the hunk at point." (interactive) (agentls--review-decide 'accept))
(defun agentls-review-reject () "Reject the hunk at point." (interactive) (agentls--review-decide 'reject))
(defun agentls-review-accept-all () "Accept every undecided hunk and finish." (interactive) (agentls--review-decide 'accept t))
(defun agentls-review-reject-all () "Reject every undecided hunk and finish." (interactive) (agentls--review-decide 'reject t))

(defun agentls-review-next ()
  "Go to the next hunk."
  (interactive)
  (agentls--review-render (min (1+ (agentls--review-current)) (1- (length (plist-get agentls--review-state :hunks))))))

(defun agentls-review-previous ()
  "Go to the previous hunk."
  (interactive)
  (agentls--review-render (max 0 (1- (agentls--review-current)))))

(defun agentls--review-close (buf)
  "Close the review buffer BUF and its timer, restoring the windows."
  (when (buffer-live-p buf)
    (let ((st (buffer-local-value 'agentls--review-state buf))
          (w (get-buffer-window buf)))
      (when (plist-get st :timer) (cancel-timer (plist-get st :timer)))
      (with-current-buffer buf (setq agentls--review-state nil))
      (if (window-live-p w) (quit-window t w) (kill-buffer buf)))))

(defun agentls--review-apply (docs)
  "Apply the accepted and unreviewed edits of DOCS; nil, or why not."
  (or (seq-some (lambda (d)
                  (let ((b (find-buffer-visiting (agentls--rdoc-path d)))
                        (v (agentls--rdoc-version d)))
                    (when (and b (integerp v) (> v 0)
                               (buffer-local-value 'agentls--conn b)
                               (> (buffer-local-value 'agentls--version b) v))
                      (format "the document %s changed during review (version %d, edit for %d)"
                              (agentls--rdoc-path d) (buffer-local-value 'agentls--version b) v))))
                docs)
      (progn
        (dolist (d docs)
          (let ((edits (append (agentls--rdoc-auto d) (agentls--rdoc-accepted d))))
            (when edits
              (with-current-buffer (find-file-noselect (agentls--rdoc-path d))
                (agentls--apply-text-edits (vconcat edits))
                (agentls--flush)))))
        nil)))

(defun agentls-review-finish ()
  "Apply the accepted hunks and answer the server (undecided hunks are rejected)."
  (interactive)
  (let* ((buf (current-buffer))
         (st agentls--review-state)
         (hunks (plist-get st :hunks))
         (docs (plist-get st :docs))
         (accepted 0))
    (unless st (user-error "agentls: no review is open here"))
    (dolist (h hunks)
      (when (eq (agentls--rhunk-decision h) 'accept)
        (cl-incf accepted)
        (let ((d (agentls--rhunk-doc h)))
          (setf (agentls--rdoc-accepted d) (append (agentls--rdoc-accepted d) (agentls--rhunk-edits h))))))
    (agentls--review-close buf)
    (let* ((rejected (and (= accepted 0) (not (seq-some #'agentls--rdoc-auto docs))))
           (failure (unless rejected
                      (condition-case e (agentls--review-apply docs)
                        (error (error-message-string e))))))
      (funcall (plist-get st :reply)
               (list :result (if (or rejected failure)
                                 (list :applied :json-false :failureReason (or failure "rejected in review"))
                               (list :applied t))))
      (message "agentls: review: %d of %d hunks accepted%s" accepted (length hunks)
               (if failure (concat "; not applied: " failure) "")))))

(defun agentls--review (params reply live)
  "Open the review of the workspace edit in PARAMS.  REPLY is called once
with the answer, (:result X) or (:error E).  The review is withdrawn (an
error answer) when LIVE returns nil or the tasks that were running end."
  (let* ((r (condition-case e (agentls--review-items (plist-get params :edit))
              (error (funcall reply (list :result (list :applied :json-false :failureReason (error-message-string e))))
                     nil)))
         (hunks (car r))
         (had-task (or agentls--pending (> (hash-table-count agentls--progress) 0))))
    (cond
     ((null r) nil)
     ((null hunks)
      (let ((why (agentls--review-apply (cadr r))))
        (funcall reply (list :result (if why (list :applied :json-false :failureReason why) (list :applied t))))))
     (t
      ;; One review at a time: an older one still open is withdrawn.
      (agentls--review-withdraw (get-buffer "*agentls review*"))
      (let ((buf (get-buffer-create "*agentls review*")))
        (with-current-buffer buf
          (diff-mode)
          (setq buffer-read-only t)
          (agentls-review-mode 1)
          (setq header-line-format agentls--review-keys)
          (add-hook 'kill-buffer-hook #'agentls--review-killed nil t)
          ;; Before diff-mode's own read-only keys (n, p, a, r, A, R, q).
          (push (cons 'agentls-review-mode agentls-review-mode-map) minor-mode-overriding-map-alist)
          (setq agentls--review-state
                (list :hunks hunks :docs (cadr r) :reply reply
                      :title (concat "agentls: review "
                                     (string-remove-prefix "agentls: " (or (plist-get params :label) "the edit")))))
          (setq agentls--review-state
                (plist-put agentls--review-state :timer
                           (run-at-time 0.5 0.5
                                        (lambda ()
                                          (when (or (not (funcall live))
                                                    (and had-task (not agentls--pending)
                                                         (= 0 (hash-table-count agentls--progress))))
                                            (agentls--review-withdraw buf)))))))
        (pop-to-buffer buf)
        (with-current-buffer buf (agentls--review-render 0))
        (message "agentls: review the edit: %s" agentls--review-keys))))))

(defun agentls--review-killed ()
  "The review buffer is killed while its review is open: nothing is
applied, and the server hears that the user rejected every hunk."
  (let ((st agentls--review-state))
    (when st
      (setq agentls--review-state nil)
      (when (plist-get st :timer) (cancel-timer (plist-get st :timer)))
      (funcall (plist-get st :reply)
               (list :result (list :applied :json-false
                                   :failureReason "rejected in review (the review buffer was killed)"))))))

(defun agentls--review-withdraw (buf)
  "Close the review in BUF (if any) without applying anything: its task ended."
  (when (and buf (buffer-live-p buf))
    (let ((st (buffer-local-value 'agentls--review-state buf)))
      (agentls--review-close buf)
      (when st
        (funcall (plist-get st :reply) (list :error (list :code -32800 :message "withdrawn: the task ended")))
        (message "agentls: review withdrawn: the task ended")))))

;;; Ghost text (inline completion)

;; `agentls-ghost-mode' shows the server's inline completion
;; (textDocument/inlineCompletion, LSP 3.18) as an overlay after point once
;; the user pauses typing, like copilot.el.  TAB accepts, M-n / M-p show the
;; next / previous one, C-g dismisses (`agentls-ghost-active-map': these
;; keys are taken only while ghost text shows); any other keystroke that
;; changes the buffer or moves point clears it.  One request at a time: a
;; new one cancels the one before ($/cancelRequest), and an answer is shown
;; only when the buffer's version and point are still those it asked at.
;; It needs the server's completion setting on:
;; (setq agentls-initialization-options \='(:completion (:enabled t))).

(defcustom agentls-ghost-delay 0.15
  "Seconds the user pauses typing before the server is asked for ghost text."
  :type 'number)

(defface agentls-ghost-face '((t :inherit shadow))
  "Face of the ghost text.")

(defvar agentls-ghost-active-map
  (let ((m (make-sparse-keymap)))
    (define-key m (kbd "TAB") #'agentls-ghost-accept)
    (define-key m (kbd "<tab>") #'agentls-ghost-accept)
    (define-key m (kbd "M-n") #'agentls-ghost-next)
    (define-key m (kbd "M-p") #'agentls-ghost-previous)
    (define-key m (kbd "C-g") #'agentls-ghost-dismiss)
    m)
  "Keys that act on the ghost text while it shows (and only then).")

(defvar-local agentls--ghost nil
  "The ghost text shown: plist (:overlay :items :index :version :point).
Each item: (:text :start :end), START-END the region it replaces.")
(defvar-local agentls--ghost-pending nil "(ID . CONN) of the request in flight.")
(defvar-local agentls--ghost-seq 0)
(defvar-local agentls--ghost-tick nil)
(defvar agentls--ghost-timer nil)

(defvar agentls--ghost-map-alist `((agentls--ghost . ,agentls-ghost-active-map)))
(add-to-list 'emulation-mode-map-alists 'agentls--ghost-map-alist)

(defun agentls--ghost-supported-p (conn)
  "Whether CONN's server offers inline completion (true or an options
object; `{}' reads as nil, so the key's presence counts)."
  (let ((caps (agentls--capabilities-of conn)))
    (and (plist-member caps :inlineCompletionProvider)
         (not (eq (plist-get caps :inlineCompletionProvider) :json-false)))))

(defun agentls--ghost-clear ()
  "Remove the ghost text shown (not the request in flight)."
  (when agentls--ghost
    (delete-overlay (plist-get agentls--ghost :overlay))
    (setq agentls--ghost nil)))

(defun agentls--ghost-cancel ()
  "Cancel the request in flight and the pending timer."
  (when agentls--ghost-timer (cancel-timer agentls--ghost-timer) (setq agentls--ghost-timer nil))
  (when agentls--ghost-pending
    (let ((conn (cdr agentls--ghost-pending)))
      (when (jsonrpc-running-p conn)
        (jsonrpc-notify conn :$/cancelRequest (list :id (car agentls--ghost-pending)))))
    (setq agentls--ghost-pending nil)))

(defun agentls--ghost-items (result pt)
  "The items of RESULT (an InlineCompletionList or a vector of items) as
ghost texts at PT: (:text :shown :start :end).  An item whose range does
not end at or after PT, or whose text does not begin with what its range
holds before PT (the user typed past it), is left out."
  (let* ((list (if (and (listp result) (plist-member result :items)) (plist-get result :items) result))
         out)
    (dolist (it (append list nil))
      (let* ((text (plist-get it :insertText))
             (text (if (stringp text) text (plist-get text :value)))
             (r (plist-get it :range))
             (start (if r (agentls--lsp-position-to-point (plist-get r :start)) pt))
             (end (if r (max pt (agentls--lsp-position-to-point (plist-get r :end))) pt)))
        (when (and (stringp text) (not (string-empty-p text)) (<= start pt))
          (let ((typed (buffer-substring-no-properties start pt)))
            (when (and (string-prefix-p typed text) (> (length text) (length typed))
                       (not (cl-find text out :key (lambda (i) (plist-get i :text)) :test #'equal)))
              (push (list :text text :shown (substring text (length typed)) :start start :end end) out))))))
    (nreverse out)))

(defun agentls--ghost-render ()
  (let* ((g agentls--ghost)
         (item (nth (plist-get g :index) (plist-get g :items)))
         (shown (copy-sequence (plist-get item :shown)))
         (ov (or (plist-get g :overlay) (make-overlay (point) (point) nil nil t))))
    (add-face-text-property 0 (length shown) 'agentls-ghost-face nil shown)
    ;; The cursor stays before the ghost text.
    (put-text-property 0 1 'cursor t shown)
    (move-overlay ov (plist-get g :point) (max (plist-get g :point) (plist-get item :end)))
    (overlay-put ov 'agentls-ghost t)
    ;; Text the item replaces after point is hidden behind the ghost.
    (overlay-put ov 'invisible (< (plist-get g :point) (plist-get item :end)))
    (overlay-put ov 'before-string shown)
    (setq agentls--ghost (plist-put g :overlay ov))))

(defun agentls--ghost-answer (result seq version pt)
  "Show RESULT when the request SEQ is the last one and the buffer is still
at VERSION with point at PT."
  (when (and (= seq agentls--ghost-seq) (= version agentls--version) (= pt (point))
             (eq (current-buffer) (window-buffer (selected-window))))
    (setq agentls--ghost-pending nil)
    (let ((items (agentls--ghost-items result pt)))
      (when items
        (agentls--ghost-clear)
        (setq agentls--ghost (list :items items :index 0 :version version :point pt))
        (agentls--ghost-render)))))

(defun agentls-ghost-complete (&optional kind)
  "Ask the server for ghost text at point now (KIND 1: invoked)."
  (interactive (list 1))
  (let ((conn agentls--conn))
    (when (and conn (jsonrpc-running-p conn) (agentls--ghost-supported-p conn) buffer-file-name)
      (agentls--ghost-cancel)
      (agentls--flush)
      (let* ((buf (current-buffer)) (version agentls--version) (pt (point))
             (seq (cl-incf agentls--ghost-seq)))
        (setq agentls--sent-id nil)
        (jsonrpc-async-request
         conn :textDocument/inlineCompletion
         (list :textDocument (list :uri (agentls--uri buffer-file-name))
               :position (agentls--lsp-position)
               :context (list :triggerKind (or kind 1)))
         :success-fn (lambda (r) (when (buffer-live-p buf)
                                   (with-current-buffer buf (agentls--ghost-answer r seq version pt))))
         :error-fn #'ignore :timeout-fn #'ignore :timeout 30)
        (when agentls--sent-id (setq agentls--ghost-pending (cons agentls--sent-id conn)))))))

(defun agentls--ghost-schedule ()
  (let ((buf (current-buffer)))
    (when agentls--ghost-timer (cancel-timer agentls--ghost-timer))
    (setq agentls--ghost-timer
          (run-at-time agentls-ghost-delay nil
                       (lambda ()
                         (setq agentls--ghost-timer nil)
                         (when (and (buffer-live-p buf) (eq buf (window-buffer (selected-window))))
                           (with-current-buffer buf (agentls-ghost-complete 2))))))))

(defconst agentls--ghost-commands
  '(agentls-ghost-accept agentls-ghost-next agentls-ghost-previous agentls-ghost-dismiss agentls-ghost-complete))

(defun agentls--ghost-post-command ()
  "After each command: a change clears the ghost text and asks again after
a pause; point moved away from it clears it."
  (let ((tick (buffer-chars-modified-tick)))
    (unless (memq this-command agentls--ghost-commands)
      (cond ((not (eql tick agentls--ghost-tick))
             (agentls--ghost-clear)
             (agentls--ghost-cancel)
             (when (and agentls--conn (not buffer-read-only)) (agentls--ghost-schedule)))
            ((and agentls--ghost (/= (point) (plist-get agentls--ghost :point)))
             (agentls--ghost-clear))))
    (setq agentls--ghost-tick tick)))

(defun agentls-ghost-accept ()
  "Insert the ghost text shown."
  (interactive)
  (let* ((g agentls--ghost)
         (item (and g (nth (plist-get g :index) (plist-get g :items)))))
    (agentls--ghost-clear)
    (agentls--ghost-cancel)
    (when (and item (= (plist-get g :version) agentls--version))
      (delete-region (plist-get item :start) (plist-get item :end))
      (goto-char (plist-get item :start))
      (insert (plist-get item :text)))))

(defun agentls--ghost-cycle (step)
  (if (not agentls--ghost)
      (agentls-ghost-complete 1)
    (let* ((g agentls--ghost) (n (length (plist-get g :items))))
      (setq agentls--ghost (plist-put g :index (mod (+ (plist-get g :index) step) n)))
      (agentls--ghost-render))))

(defun agentls-ghost-next () "Show the next ghost text." (interactive) (agentls--ghost-cycle 1))
(defun agentls-ghost-previous () "Show the previous ghost text." (interactive) (agentls--ghost-cycle -1))

(defun agentls-ghost-dismiss ()
  "Remove the ghost text; nothing is asked until the next change."
  (interactive)
  (agentls--ghost-clear)
  (agentls--ghost-cancel))

;;;###autoload
(define-minor-mode agentls-ghost-mode
  "Ghost text: the agentls server's inline completion after point while typing."
  :lighter nil
  (if agentls-ghost-mode
      (progn
        ;; A server that cannot start leaves the buffer as it is (no ghost
        ;; text), never the file unopened (the mode may run from a hook).
        (when buffer-file-name
          (condition-case err (agentls--did-open (agentls--connection))
            (error (message "agentls: no ghost text: %s" (error-message-string err)))))
        (setq agentls--ghost-tick (buffer-chars-modified-tick))
        (add-hook 'post-command-hook #'agentls--ghost-post-command nil t))
    (remove-hook 'post-command-hook #'agentls--ghost-post-command t)
    (agentls-ghost-dismiss)))

(provide 'agentls)
;;; agentls.el ends here
