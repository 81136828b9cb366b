;; pycsamt-lsp with eglot (built into Emacs 29+). Eglot runs one server per
;; buffer: in Markdown and reST buffers pycsamt-lsp is the server; in Python
;; buffers (python-mode and python-ts-mode) it is offered next to your Python
;; server, which stays the default: `C-u M-x eglot' picks pycsamt-lsp, and it
;; is used when no other Python server is installed.
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((markdown-mode rst-mode) . ("pycsamt-lsp" "serve")))
  (add-to-list 'eglot-server-programs
               `((python-mode python-ts-mode)
                 . ,(eglot-alternatives
                     '("pylsp" ("basedpyright-langserver" "--stdio")
                       ("pyright-langserver" "--stdio") "jedi-language-server"
                       ("pycsamt-lsp" "serve"))))))
(setq-default eglot-workspace-configuration
              '(:pycsamt (:corpusRoot "~/src/pycsamt")))
(add-hook 'python-mode-hook #'eglot-ensure)
(add-hook 'python-ts-mode-hook #'eglot-ensure)
