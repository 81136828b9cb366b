-- pycsamt-lsp beside your other servers, Neovim 0.11+ (`:help lsp-config`).
-- With nvim-lspconfig installed this is the same: it ships no pycsamt config.
vim.lsp.config("pycsamt_lsp", {
  cmd = { "pycsamt-lsp", "serve" },
  filetypes = { "python", "markdown", "rst" },
  root_markers = { "pyproject.toml", "setup.py", "setup.cfg", ".git" },
  settings = {
    pycsamt = { corpusRoot = "~/src/pycsamt" },
  },
})
vim.lsp.enable("pycsamt_lsp")
