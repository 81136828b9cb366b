-- Checks run inside a real headless Neovim whose only configuration is a
-- README snippet (docs/editors/nvim*.lua, loaded with -u, unmodified) and
-- which opened survey.py (see editors_test.sh). The snippet must attach the
-- buffer by itself; this script only observes: the negotiated position
-- encoding, the diagnostic on exactly `static_shift` in a line with
-- non-BMP characters, the quick fix applied by Neovim's own edit code, and
-- a hover card. Prints TAP-like lines and "nvim: N passed, M failed".
local label = os.getenv('PYCSAMT_LABEL') or 'nvim'
local timeout = tonumber(os.getenv('PYCSAMT_TIMEOUT_MS') or '120000')
local passed, failed = 0, 0
local function out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end
local function check(name, ok, detail)
  if ok then
    passed = passed + 1
  else
    failed = failed + 1
  end
  out((ok and 'ok - ' or 'not ok - ') .. label .. ': ' .. name .. (detail and (': ' .. detail) or ''))
  return ok
end

local bufnr = vim.api.nvim_get_current_buf()
local ok, err = pcall(function()
  check('version', vim.version().minor >= 10, tostring(vim.version()))
  local client
  local attached = vim.wait(30000, function()
    client = vim.lsp.get_clients({ bufnr = bufnr })[1]
    return client ~= nil and client.initialized == true
  end, 50)
  if not check('the snippet attached the buffer', attached, client and client.name or 'no client') then
    return
  end
  check('one client for the buffer', #vim.lsp.get_clients({ bufnr = bufnr }) == 1)
  check('position encoding utf-8 negotiated', client.offset_encoding == 'utf-8', client.offset_encoding)

  local hit
  local got = vim.wait(timeout, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.message:find('static_shift', 1, true) then
        hit = d
        return true
      end
    end
    return false
  end, 100)
  if not check('diagnostic for the hallucinated import', got, hit and hit.message or vim.inspect(vim.diagnostic.get(bufnr))) then
    return
  end
  local line = vim.api.nvim_buf_get_lines(bufnr, hit.lnum, hit.lnum + 1, false)[1]
  -- Neovim turns the server's columns into byte columns of the line
  local covered = line:sub(hit.col + 1, hit.end_col)
  check('the squiggle covers exactly static_shift', covered == 'static_shift', vim.inspect(covered))
  local lsp_diag = hit.user_data and hit.user_data.lsp or {}
  local href = lsp_diag.codeDescription and lsp_diag.codeDescription.href or ''
  check('its code links to the README', href:find('#diagnostic-codes', 1, true) ~= nil, tostring(hit.code) .. ' ' .. href)

  -- hover over estimate_ss_ama (0-based line 3)
  local src = vim.api.nvim_buf_get_lines(bufnr, 3, 4, false)[1]
  local col = src:find('estimate_ss_ama', 1, true) + 2
  local res = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = 3, character = col },
  }, 30000)
  local text = ''
  for _, r in pairs(res or {}) do
    local c = r.result and r.result.contents
    if type(c) == 'table' and c.value then
      text = text .. c.value
    end
  end
  check('hover shows the real signature', text:find('half_window', 1, true) ~= nil, vim.inspect(text:sub(1, 120)))

  -- the preferred quick fix, applied by Neovim
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = {
      start = { line = hit.lnum, character = 0 },
      ['end'] = { line = hit.lnum, character = #line },
    },
    context = { diagnostics = { hit.user_data.lsp }, only = { 'quickfix' } },
  }
  local actions = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', params, 30000)
  local action
  for _, r in pairs(actions or {}) do
    for _, a in ipairs(r.result or {}) do
      action = action or a
    end
  end
  if check('a quick fix is offered', action ~= nil and action.edit ~= nil, action and action.title or 'none') then
    vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
    local fixed = vim.api.nvim_buf_get_lines(bufnr, hit.lnum, hit.lnum + 1, false)[1]
    check(
      'the fix rewrites only the import',
      fixed:sub(1, #'s = "é𝄞"; from pycsamt') == 's = "é𝄞"; from pycsamt' and not fixed:find('static_shift', 1, true),
      vim.inspect(fixed)
    )
  end
end)
if not ok then
  check('no Lua error', false, tostring(err))
end
for _, c in ipairs(vim.lsp.get_clients()) do
  c:stop()
end
vim.wait(3000, function()
  return #vim.lsp.get_clients() == 0
end, 50)
out(string.format('%s: %d passed, %d failed', label, passed, failed))
vim.cmd(failed > 0 and 'cquit 1' or 'qall!')
