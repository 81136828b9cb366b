-- Headless Neovim (0.7+) as an LSP client of pycsamt-lsp: start the server with
-- the built-in client, open a Python file with a hallucinated import, and check
-- that the diagnostic, a hover card and a command result arrive.
-- Driven by nvim_test.sh, which passes everything through the environment.
local python = assert(os.getenv('PYCSAMT_PYTHON'), 'PYCSAMT_PYTHON not set')
local file = assert(os.getenv('PYCSAMT_FILE'), 'PYCSAMT_FILE not set')
local corpus = assert(os.getenv('PYCSAMT_CORPUS'), 'PYCSAMT_CORPUS not set')
local timeout = tonumber(os.getenv('PYCSAMT_TIMEOUT_MS') or '300000')
local root = vim.fn.fnamemodify(file, ':h')

local passed, failed = 0, 0
local function out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end
local function check(name, ok, detail)
  if ok then
    passed = passed + 1
    out('ok - ' .. name .. (detail and (': ' .. detail) or ''))
  else
    failed = failed + 1
    out('not ok - ' .. name .. (detail and (': ' .. detail) or ''))
  end
  return ok
end
local function finish()
  out(string.format('nvim: %d passed, %d failed', passed, failed))
  if failed > 0 then
    vim.cmd('cquit 1')
  else
    vim.cmd('qall!')
  end
end

local settings = {
  corpusRoot = corpus,
  -- a fresh index in a temp folder (nvim_test.sh), so runs do not depend on each other
  indexDir = os.getenv('PYCSAMT_INDEX_DIR'),
  profile = 'pycsamt',
  resultCount = 10,
  dense = false,
  openaiModel = 'gpt-4o-mini',
  logLevel = 'info',
  diagnosticsSeverity = 'error',
}

local ok, err = pcall(function()
  local client_id = vim.lsp.start_client({
    name = 'pycsamt-lsp',
    cmd = { python, '-m', 'pycsamt_lsp', 'serve' },
    cmd_env = { PYTHONPATH = os.getenv('PYTHONPATH') },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = 'ws' } },
    init_options = settings,
    -- answers workspace/configuration for section "pycsamt"
    settings = { pycsamt = settings },
  })
  if not check('start_client', client_id ~= nil, tostring(client_id)) then
    return
  end
  local client = vim.lsp.get_client_by_id(client_id)

  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = 'python'
  vim.lsp.buf_attach_client(bufnr, client_id)

  local inited = vim.wait(60000, function()
    return client.initialized == true
  end, 50)
  if not check('initialize', inited, client.server_capabilities and 'server capabilities received' or nil) then
    return
  end

  -- the diagnostic for `from pycsamt import static_shift`
  local got = vim.wait(timeout, function()
    return #vim.diagnostic.get(bufnr) > 0
  end, 100)
  local diags = vim.diagnostic.get(bufnr)
  local hit
  for _, d in ipairs(diags) do
    if d.message:find('static_shift', 1, true) then
      hit = d
    end
  end
  check(
    'diagnostic for the hallucinated import',
    got and hit ~= nil and hit.lnum == 0 and hit.severity == vim.diagnostic.severity.ERROR,
    hit and string.format('line %d: %s', hit.lnum + 1, hit.message) or string.format('%d diagnostics: %s', #diags, vim.inspect(diags))
  )

  -- hover over estimate_ss_ama (line 4, 1-based)
  local line = vim.api.nvim_buf_get_lines(bufnr, 3, 4, false)[1] or ''
  local col = (line:find('estimate_ss_ama', 1, true) or 1) + 2
  local hover = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = 3, character = col },
  }, 30000)
  local text = ''
  for _, res in pairs(hover or {}) do
    if res.result and res.result.contents then
      local c = res.result.contents
      if type(c) == 'string' then
        text = text .. c
      elseif c.value then
        text = text .. c.value
      else
        for _, part in ipairs(c) do
          text = text .. (type(part) == 'string' and part or (part.value or ''))
        end
      end
    elseif res.err then
      text = text .. 'error: ' .. vim.inspect(res.err)
    end
  end
  check(
    'hover shows the real signature',
    text:find('estimate_ss_ama', 1, true) ~= nil and text:find('half_window', 1, true) ~= nil,
    vim.inspect(text:sub(1, 160))
  )

  -- a command through workspace/executeCommand
  local q = client.request_sync('workspace/executeCommand', {
    command = 'pycsamt.query',
    arguments = { { query = 'static shift correction', k = 3 } },
  }, 60000, bufnr)
  local results = q and q.result and q.result.results or {}
  check(
    'pycsamt.query',
    #results > 0,
    #results > 0 and string.format('%d results, top %q', #results, results[1].label or '?') or vim.inspect(q)
  )

  client.stop()
  vim.wait(5000, function()
    return client.is_stopped()
  end, 50)
end)
if not ok then
  check('no Lua error', false, tostring(err))
end
finish()
