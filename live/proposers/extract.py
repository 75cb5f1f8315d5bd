"""Pull the candidate module out of an LLM reply.

Rules, in order: drop reasoning sections (``<think>…</think>``); truncate enormous replies; collect
fenced code blocks (an unterminated last fence, as when a reply hits its token limit, counts up to
the end); prefer blocks tagged ``python``/``py``; among those, prefer one that defines the task's
entry function and a kernel of the task's language (``@triton.jit`` for Triton), then one
defining the entry, then one with a kernel (the last of equals);
the chosen block must parse (``ast``). A reply without a fence is taken whole only when it parses
and defines the entry function (some servers strip fences).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from live.evaluator.languages import kernel_language
from live.pyast import parse

#: replies longer than this are cut before extraction (a runaway generation, not a kernel)
MAX_REPLY_CHARS = 200_000

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*\n", re.MULTILINE)


@dataclass(frozen=True)
class Extraction:
    """``code`` when a usable block was found, else ``error`` says why (status ``no_code``)."""

    code: str | None
    error: str | None


def _blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of every fenced block, in order."""
    blocks: list[tuple[str, str]] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            return blocks
        fence, lang = opening.group(1), opening.group(2).lower()
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, opening.end())
        if end is None:
            blocks.append((lang, text[opening.end() :]))
            return blocks
        blocks.append((lang, text[opening.end() : end.start()]))
        pos = end.end()


def _parses(code: str) -> ast.Module | None:
    try:
        return parse(code)
    except (SyntaxError, ValueError):
        return None


def _defines(tree: ast.Module, entry: str) -> bool:
    """Whether the module defines `entry` at its top level: a function, or a class (a
    KernelBench candidate's ``ModelNew``)."""
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.name == entry
        for node in tree.body
    )


def extract_code(reply: str, entry: str, language: str = "triton") -> Extraction:
    """The candidate module in ``reply`` for a task whose entry function is ``entry`` and whose
    kernels are written in ``language`` (``Task.language``)."""
    has_kernel = kernel_language(language).mentions_kernel
    if not reply or not reply.strip():
        return Extraction(None, "empty reply")
    text = _THINK.sub("", reply[:MAX_REPLY_CHARS])
    blocks = _blocks(text)
    if not blocks:
        tree = _parses(text)
        if tree is not None and _defines(tree, entry):
            return Extraction(text.strip() + "\n", None)
        return Extraction(None, "reply has no fenced code block")
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    candidates = python or [body for _, body in blocks]
    parsed = [(body, _parses(body)) for body in candidates]
    good = [(body, tree) for body, tree in parsed if tree is not None]
    if not good:
        return Extraction(None, f"none of the reply's {len(candidates)} code block(s) parses")
    # among equally good blocks the last wins: replies often show a draft before the final version
    ranked = sorted(
        reversed(good),
        key=lambda bt: (not (_defines(bt[1], entry) and has_kernel(bt[0])),
                        not _defines(bt[1], entry),
                        not has_kernel(bt[0])),
    )
    body, tree = ranked[0]
    # NOTE (D20): a block that parses but defines no entry function is ``no_code`` rather than
    # ``ok``: the reply holds no candidate, and the status should say so at its source instead
    # of the evaluator failing the import later.
    if not _defines(tree, entry):
        return Extraction(None, f"no code block defines the entry function {entry!r}")
    return Extraction(body.strip("\n") + "\n", None)
