"""How ``pycsamt.ask`` answers: one frozen :class:`AskSettings` value.

A workspace's :class:`~pycsamt_lsp.answer.service.AnswerService` holds the
current value and swaps it whole on a configuration change; the API key and
base URL fall back to the environment, read when used, never stored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["DEFAULT_MODEL", "AskSettings"]

DEFAULT_MODEL = "gpt-4o-mini"


@dataclass(frozen=True)
class AskSettings:
    """How ``ask`` answers; ``api_key``/``base_url`` fall back to the environment.

    The key is excluded from ``repr`` and never copied into results or logs.
    """

    model: str = DEFAULT_MODEL
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    timeout: float = 30.0
    dense: bool = False
    use_openai: bool = True  # False: always the offline answer
    registry: str | None = None  # explicit registry file
    workspace_root: str | None = None  # the editor's folder, when not the corpus
    papers: bool = True
    papers_dir: str | None = None  # default: the profile's papers_dir
    # with a key: the model's routing decision (offline fallback)
    model_routing: bool = False

    def key(self) -> str | None:
        """The OpenAI key from the setting or ``OPENAI_API_KEY`` (None when unset)."""
        return self.api_key or os.environ.get("OPENAI_API_KEY") or None

    def url(self) -> str | None:
        """The API base URL from the setting or ``OPENAI_BASE_URL``."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None
