"""Fixture trees with hostile files, paths and planted credentials (issue 19).

Written by the tests into their own temp folders: the corpus is never
touched. :func:`write_odd_files` adds one of each kind of file that used to
fail or hang a whole build; :func:`write_outside_links` adds symlinks that
lead out of the corpus root.
"""

from __future__ import annotations

import os
from pathlib import Path

#: a token only the file outside the corpus holds: it must never be shown
OUTSIDE_TOKEN = "outsideleaktokenqzx"
#: a function only the BOM file defines: it must be indexed
BOM_TOKEN = "bom_unique_function_qzx"
#: a function of the file next to the odd ones: it must be indexed
GOOD_TOKEN = "good_neighbour_function_qzx"

HUGE_BYTES = 50 * 1024 * 1024


def write_odd_files(pkg: Path, *, huge: bool = True) -> dict[str, str]:
    """One file of each odd kind under *pkg*; returns ``{name: what it is}``."""
    made: dict[str, str] = {}

    def put(name: str | bytes, data: bytes, what: str) -> None:
        path = os.path.join(os.fsencode(pkg), os.fsencode(name))
        with open(path, "wb") as fh:
            fh.write(data)
        made[os.fsdecode(name)] = what

    put(
        "good_neighbour.py",
        f"def {GOOD_TOKEN}(x):\n    '''Kept.'''\n    return x\n".encode(),
        "valid",
    )
    put(b"bad_name_\xff.py", b"def odd_name():\n    pass\n", "non-UTF-8 name")
    put("deep.py", b"x = " + b"1+" * 100_000 + b"1\n", "deeply nested expression")
    put("deep_parens.py", b"x = " + b"(" * 50_000 + b")" * 50_000 + b"\n", "nesting")
    put("binary.py", bytes(range(256)) * 64 + b"\x00\x00", "binary named .py")
    put("latin.py", b"# caf\xe9\ndef latin_fn():\n    pass\n", "invalid UTF-8")
    put(
        "bom.py",
        f"\ufeff'''BOM module.'''\n\n\ndef {BOM_TOKEN}(a):\n    '''Doc.'''\n    return a\n".encode(),
        "UTF-8 BOM",
    )
    put("nul.py", b"def with_nul():\n    return '\x00'\n", "NUL byte")
    put("unreadable.py", b"def hidden():\n    pass\n", "unreadable")
    os.chmod(pkg / "unreadable.py", 0)
    if huge:
        line = b"VALUE_%08d = 1  # padding padding padding padding padding\n"
        n = HUGE_BYTES // len(line % 0) + 1
        with open(pkg / "huge.py", "wb") as fh:
            fh.write(b"".join(line % i for i in range(n)))
        made["huge.py"] = "50 MB"
    os.mkfifo(pkg / "fifo.py")
    made["fifo.py"] = "FIFO"
    (pkg / "folder.py").mkdir()
    (pkg / "folder.py" / "inner.txt").write_text("x")
    made["folder.py"] = "directory named .py"
    os.symlink("loop_a.py", pkg / "loop_b.py")
    os.symlink("loop_b.py", pkg / "loop_a.py")
    made["loop_a.py"] = "symlink loop"
    os.symlink(".", pkg / "selfdir")
    made["selfdir"] = "directory symlink loop"
    os.symlink("missing_target.py", pkg / "dangling.py")
    made["dangling.py"] = "dangling symlink"
    return made


def write_outside_links(root: Path, outside: Path) -> None:
    """Symlinks in the corpus to a file and a folder outside *root*, and one
    to a file inside it (that one may be followed)."""
    outside.mkdir(parents=True, exist_ok=True)
    text = (
        f'"""Outside."""\n\n\ndef {OUTSIDE_TOKEN}():\n    """{OUTSIDE_TOKEN} doc."""\n'
    )
    (outside / "leak.py").write_text(text, encoding="utf-8")
    (outside / "leak.md").write_text(f"# Leak\n\n{OUTSIDE_TOKEN} text\n", "utf-8")
    pkg = root / "pkg"
    os.symlink(outside / "leak.py", pkg / "linked_out.py")
    os.symlink(outside, pkg / "linked_dir")
    os.symlink(outside / "leak.md", root / "docs" / "linked_out.md")
    os.symlink(root / "pkg" / "phase.py", pkg / "linked_in.py")


def _v(tag: str) -> str:
    """A distinctive fake credential body (never a real key)."""
    return f"Zq9{tag}Xv7Lm2Pw8Rt4Yk6Hn3"


#: name -> the planted credential value (the part that must never be shown)
SECRETS: dict[str, str] = {
    "default_arg_sk": "sk-proj-" + _v("a1"),
    "default_arg_plain": "plain" + _v("a2"),
    "kwonly_default": "kw" + _v("a3"),
    "docstring_example_sk": "sk-" + _v("a4"),
    "docstring_example_token": "tok" + _v("a5"),
    "class_attr_token": "cls" + _v("a6"),
    "class_attr_password": "pw" + _v("a7"),
    "module_secret_key": "mod" + _v("a8"),
    "aws_access_key": "AKIA" + "QZXW1234ABCD5678",
    "aws_secret": "aws" + _v("a9"),
    "bearer": "eyJ" + _v("b1"),
    "url_password": "urlpw" + _v("b2"),
    "github_pat": "ghp_" + _v("b3") + "abcdefgh",
    "slack": "xoxb-" + _v("b4"),
    "google": "AIza" + _v("b5") + "abcdefghijk",
    "dict_client_secret": "cs" + _v("b6"),
    "md_export_openai": "sk-" + _v("b7"),
    "md_yaml_api_key": "yaml" + _v("b8"),
    "md_url": "mdurl" + _v("b9"),
    "rst_export": "rst" + _v("c1"),
    "rst_password": "rstpw" + _v("c2"),
    "rst_code_token": "sk-live-" + _v("c3"),
    "private_key": "MIIE" + _v("c4"),
    "comment_token": "cmt" + _v("c5"),
}


def write_secrets(root: Path) -> dict[str, str]:
    """Plant every credential of :data:`SECRETS` in corpus files under *root*
    (a Python module, a Markdown and a reST page); returns :data:`SECRETS`."""
    s = SECRETS
    py = f'''"""Cloud connection helpers.

Example::

    >>> client = connect_cloud(api_key="{s["docstring_example_sk"]}")
    >>> session = Session(token="{s["docstring_example_token"]}")
"""

SECRET_KEY = "{s["module_secret_key"]}"
AWS_ACCESS_KEY_ID = "{s["aws_access_key"]}"
aws_secret_access_key = "{s["aws_secret"]}"
DATABASE_URL = "postgres://admin:{s["url_password"]}@db.example.org/prod"
HEADERS = {{"Authorization": "Bearer {s["bearer"]}"}}
CONFIG = {{"client_secret": "{s["dict_client_secret"]}"}}
GITHUB = "{s["github_pat"]}"
SLACK = "{s["slack"]}"
GOOGLE = "{s["google"]}"
# token: {s["comment_token"]}
KEY = """-----BEGIN RSA PRIVATE KEY-----
{s["private_key"]}
-----END RSA PRIVATE KEY-----"""


def connect_cloud(api_key="{s["default_arg_sk"]}", region="eu"):
    """Connect to the cloud service with an API key."""
    return api_key, region


def open_vault(path, password="{s["default_arg_plain"]}", *, auth_token="{s["kwonly_default"]}"):
    """Open the vault at a path."""
    return path


class CloudClient:
    """A client for the cloud service."""

    token = "{s["class_attr_token"]}"
    password: str = "{s["class_attr_password"]}"

    def fetch(self, what):
        """Fetch something from the cloud."""
        return what
'''
    md = f"""# Cloud setup

Set your key before connecting to the cloud:

```bash
export OPENAI_API_KEY={s["md_export_openai"]}
```

```yaml
api_key: {s["md_yaml_api_key"]}
```

The cloud mirror is https://user:{s["md_url"]}@mirror.example.org/data.
"""
    rst = f"""Cloud vault
===========

Connect the vault to the cloud:

.. code-block:: bash

   export VAULT_SECRET={s["rst_export"]}
   DB_PASSWORD={s["rst_password"]}

.. code-block:: python

   connect_cloud(api_key="{s["rst_code_token"]}")
"""
    (root / "pkg" / "cloud.py").write_text(py, encoding="utf-8")
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "cloud.md").write_text(md, encoding="utf-8")
    (root / "docs" / "vault.rst").write_text(rst, encoding="utf-8")
    return dict(s)
