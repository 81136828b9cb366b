;;; eglot_check.el --- checks inside a real Emacs whose only configuration is a README snippet -*- lexical-binding: t -*-
;;
;; Run by editors_test.sh as
;;   emacs --batch -Q -l docs/editors/eglot.el -l tests/editors/eglot_check.el
;; with PYCSAMT_FILE (survey.py) and PYCSAMT_MODE (python-mode or
;; python-ts-mode).  The snippet is loaded unmodified; this file opens the
;; file in that mode (the snippet's hook calls `eglot-ensure', which connects
;; after the command that opened the buffer, so `post-command-hook' is run as
;; the command loop would), then observes: the negotiated position encoding,
;; the diagnostic on exactly `static_shift' in a line with non-BMP
;; characters, the quick fix applied by eglot's own edit code, and a hover.
;; Prints TAP-like lines and "LABEL: N passed, M failed"; exits 1 on failure.

(require 'eglot)
(require 'cl-lib)

(defvar pc-passed 0)
(defvar pc-failed 0)
(defvar pc-label (or (getenv "PYCSAMT_LABEL") "emacs"))

(defun pc-check (name ok &optional detail)
  (if ok (cl-incf pc-passed) (cl-incf pc-failed))
  (princ (format "%s - %s: %s%s\n" (if ok "ok" "not ok") pc-label name
                 (if detail (format ": %s" detail) "")))
  ok)

(defun pc-wait (pred seconds)
  "Run the event loop until PRED is non-nil or SECONDS pass."
  (let ((end (+ (float-time) seconds)) val)
    (while (and (not (setq val (funcall pred))) (< (float-time) end))
      (accept-process-output nil 0.1))
    val))

(cl-defun pc-run ()
  (let* ((file (getenv "PYCSAMT_FILE"))
         (mode (intern (getenv "PYCSAMT_MODE")))
         (timeout (/ (string-to-number (or (getenv "PYCSAMT_TIMEOUT_MS") "120000")) 1000.0)))
    (when (eq mode 'python-ts-mode)
      (setq treesit-extra-load-path (list (getenv "TS_GRAMMAR_DIR")))
      (pc-check "tree-sitter Python grammar" (treesit-language-available-p 'python)))
    (pc-check "version" (>= emacs-major-version 29) emacs-version)
    (find-file file)
    (funcall mode)
    (pc-check "major mode" (eq major-mode mode) major-mode)
    (run-hooks 'post-command-hook)  ; where eglot-ensure connects
    (let ((server (pc-wait (lambda () (eglot-current-server)) 30)))
      (unless (pc-check "the snippet started eglot for the buffer" server)
        (cl-return-from pc-run))
      (pc-check "it is pycsamt-lsp"
                (string-match-p "pycsamt-lsp" (format "%s" (process-command (jsonrpc--process server))))
                (process-command (jsonrpc--process server)))
      (pc-check "position encoding utf-32 negotiated"
                (equal (plist-get (eglot--capabilities server) :positionEncoding) "utf-32")
                (plist-get (eglot--capabilities server) :positionEncoding))
      (let ((diag
             (pc-wait (lambda ()
                        (flymake-start)
                        (cl-find-if (lambda (d) (string-match-p "static_shift" (flymake-diagnostic-text d)))
                                    (flymake-diagnostics)))
                      timeout)))
        (unless (pc-check "diagnostic for the hallucinated import" diag
                          (and diag (flymake-diagnostic-text diag)))
          (cl-return-from pc-run))
        (let ((covered (buffer-substring-no-properties (flymake-diagnostic-beg diag)
                                                       (flymake-diagnostic-end diag))))
          (pc-check "the squiggle covers exactly static_shift" (equal covered "static_shift")
                    (format "%S" covered)))
        ;; hover over estimate_ss_ama
        (goto-char (point-min))
        (search-forward "estimate_ss_ama(")
        (backward-char 5)
        (let* ((hover (jsonrpc-request server :textDocument/hover
                                       (eglot--TextDocumentPositionParams)))
               (value (format "%s" (plist-get (plist-get hover :contents) :value))))
          (pc-check "hover shows the real signature" (string-match-p "half_window" value)
                    (substring value 0 (min 100 (length value)))))
        ;; the first quick fix, applied by eglot
        (let* ((line-beg (save-excursion (goto-char (flymake-diagnostic-beg diag))
                                         (line-beginning-position)))
               (actions (eglot-code-actions (flymake-diagnostic-beg diag)
                                            (flymake-diagnostic-end diag) "quickfix"))
               (action (car actions)))
          (when (pc-check "a quick fix is offered" action (and action (plist-get action :title)))
            (eglot-execute server action)
            (let ((fixed (save-excursion
                           (goto-char line-beg)
                           (buffer-substring-no-properties line-beg (line-end-position)))))
              (pc-check "the fix rewrites only the import"
                        (and (string-prefix-p "s = \"é𝄞\"; from pycsamt" fixed)
                             (not (string-match-p "static_shift" fixed)))
                        (format "%S" fixed))))))
      (ignore-errors (eglot-shutdown server)))))

(condition-case err
    (pc-run)
  (error (pc-check "no Lisp error" nil (error-message-string err))))
(princ (format "%s: %d passed, %d failed\n" pc-label pc-passed pc-failed))
(kill-emacs (if (> pc-failed 0) 1 0))
