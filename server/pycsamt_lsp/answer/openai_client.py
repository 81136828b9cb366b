"""Answers written by an OpenAI chat model, grounded in the excerpts.

The ``openai`` package (extra ``openai``) gets the question, the labelled
excerpts and grounding rules. Every failure (no key, timeout, HTTP error,
an empty reply) raises :class:`~pycsamt_lsp.errors.AnswerError` with a
reason safe to show: the key is masked, never logged or echoed.
"""

from __future__ import annotations

from typing import Any

from pycsamt_lsp.answer.evidence import AssembledContext
from pycsamt_lsp.answer.settings import AskSettings
from pycsamt_lsp.errors import AnswerError
from pycsamt_lsp.text.secrets import scrub

__all__ = ["SYSTEM_PROMPT", "AnswerError", "openai_answer", "scrub"]


SYSTEM_PROMPT = """You answer questions about the Python package `{package}` for a geophysicist, \
using ONLY the numbered excerpts from the package's source, docs, recipes and papers given below.

Grounding rules:
1. Use only facts stated in the excerpts, the API cards and the project context. Do not rely on \
memory of the package: names, parameters and defaults must come from the excerpts.
2. Cite every excerpt you use with its number in square brackets, e.g. [1] or [2][3].
3. If the excerpts do not cover the question, say so plainly and say what is missing; never \
invent a class, function, module or parameter.
4. In code, import and call only names shown in the excerpts or API cards, with the parameters \
shown there, and put code in ```python fences.
5. Be concise; answer in Markdown."""


def openai_answer(ctx: AssembledContext, settings: AskSettings) -> str:
    """The model's grounded answer; :class:`AnswerError` with a safe reason on failure."""
    key = settings.key()
    if not key:
        raise AnswerError("no OpenAI API key")
    try:
        import openai
    except ImportError:
        raise AnswerError(
            "the `openai` package is not installed (extra `openai`)"
        ) from None
    user = (
        f"Question: {ctx.question}\n\n"
        + ctx.context_text()
        + "\n\nAnswer the question from these excerpts only, citing them as [n]."
    )
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM_PROMPT.format(package=ctx.package)},
        {"role": "user", "content": user},
    ]
    client = None
    try:
        client = openai.OpenAI(
            api_key=key,
            base_url=settings.url(),
            timeout=settings.timeout,
            max_retries=0,
        )
        resp = client.chat.completions.create(
            model=settings.model, messages=messages, temperature=0
        )
        text = (resp.choices[0].message.content or "").strip() if resp.choices else ""
    except openai.APITimeoutError:
        raise AnswerError(
            f"the OpenAI request timed out after {settings.timeout:g} s"
        ) from None
    except openai.APIStatusError as exc:
        detail = ""
        try:
            body = exc.response.json()
            detail = (body.get("error") or {}).get("message") or ""
        except Exception:  # noqa: BLE001 - the body is optional
            detail = ""
        raise AnswerError(
            scrub(
                f"the OpenAI API returned HTTP {exc.status_code}"
                + (f": {detail}" if detail else ""),
                key,
            )
        ) from None
    except openai.APIConnectionError as exc:
        raise AnswerError(
            scrub(f"could not reach the OpenAI API: {exc}", key)
        ) from None
    except Exception as exc:  # noqa: BLE001 - anything else: fall back, say why
        raise AnswerError(
            scrub(f"OpenAI call failed: {type(exc).__name__}: {exc}", key)
        ) from None
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001
                pass
    if not text:
        raise AnswerError("the model returned an empty answer")
    return text
