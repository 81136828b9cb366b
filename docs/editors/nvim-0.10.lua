-- pycsamt-lsp on Neovim 0.10 (no vim.lsp.config yet): one client per project
-- root, reused for every buffer of that root, beside your other servers.
vim.api.nvim_create_autocmd("FileType", {
  pattern = { "python", "markdown", "rst" },
  callback = function(args)
    vim.lsp.start({
      name = "pycsamt-lsp",
      cmd = { "pycsamt-lsp", "serve" },
      root_dir = vim.fs.root(args.buf, { "pyproject.toml", "setup.py", "setup.cfg", ".git" })
        or vim.fn.getcwd(),
      settings = {
        pycsamt = { corpusRoot = "~/src/pycsamt" },
      },
    }, { bufnr = args.buf })
  end,
})
