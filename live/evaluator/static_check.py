"""A static pre-check of candidate source: refuse what a kernel has no business doing.

``static_check(code, language) -> str | None`` reads the candidate's AST (it never runs it) and
returns one sentence saying why the candidate is ``rejected``, or None. It runs in the parent
before a worker sees the code, so a rejected candidate costs microseconds, not a worker.

What it refuses, and why:

- **processes and the network**: imports of ``socket``, ``subprocess``, ``multiprocessing``,
  ``ctypes``, ``urllib``, ``http``, ``requests``… and calls of ``os.system``, ``os.popen``,
  ``os.exec*``, ``os.spawn*``, ``os.fork``, ``os.kill``;
- **the file system outside the candidate's own directory**: ``shutil``, ``os.remove``,
  ``os.unlink``, ``os.rmdir``, ``os.rename``, ``os.replace``, ``Path.unlink``/``rmdir``, and
  ``open`` of an absolute path;
- **secrets**: ``os.environ``, ``os.getenv`` (the sandbox scrubs keys anyway, but a kernel that
  looks is up to no good);
- **escaping the check**: ``eval``, ``exec``, ``compile``, ``__import__``, ``importlib``,
  ``inspect``, ``gc``, ``sys._getframe`` and frame/code attributes (``f_back``, ``f_locals``,
  ``tb_frame``…), the ways a candidate could fish the reference's output out of the evaluator;
- **timing tricks**: CUDA side streams (``torch.cuda.Stream``/``stream``/``set_stream``) — work
  on a side stream escapes the events that time the default stream;
- **no kernel**: a module with no kernel function of the task's language (``@triton.jit`` for
  Triton, see ``live.evaluator.languages``) or no launch of one (``kernel[grid](...)``), i.e.
  torch ops instead of a kernel.

A task source may add rules of its own (``static_check(arg, name, code)`` in its module, see
``live.tasks.sources``): ``static_check_for_task`` runs both; KernelBench's refuse a torch
fallback and outputs kept across calls (``live.tasks.kernelbench.shortcuts``).

``NOTE (D12)``: this is a tripwire, not a proof: a determined candidate can hide what it does
from any static check. The sandbox (scrubbed environment, own session, resource limits, the
worker's audit guard in ``live.evaluator.guard``) is what contains the rest.
"""

from __future__ import annotations

import ast

from live.evaluator.languages import TRITON, KernelLanguage, dotted_name, kernel_language
from live.pyast import parse

_FORBIDDEN_MODULES = {
    "socket", "socketserver", "ssl", "subprocess", "multiprocessing", "ctypes", "cffi",
    "urllib", "urllib3", "http", "requests", "httpx", "aiohttp", "ftplib", "smtplib",
    "telnetlib", "asyncio", "shutil", "pty", "gc", "inspect", "importlib", "builtins",
    "pickle", "marshal", "resource", "signal", "webbrowser", "xmlrpc",
}
_FORBIDDEN_OS_CALLS = {
    "system", "popen", "fork", "forkpty", "kill", "killpg", "remove", "unlink", "rmdir",
    "removedirs", "rename", "renames", "replace", "truncate", "chmod", "chown", "symlink",
    "link", "putenv", "unsetenv", "getenv", "getenvb", "environ", "environb", "execv",
    "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe", "spawnl",
    "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
    "posix_spawn", "posix_spawnp", "_exit", "abort", "setsid", "chdir", "chroot",
}
_FORBIDDEN_BUILTINS = {"eval", "exec", "compile", "__import__", "breakpoint", "globals",
                       "vars", "locals"}
_FORBIDDEN_ATTRS = {
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "tb_frame", "tb_next",
    "gi_frame", "cr_frame", "ag_frame", "__globals__", "__code__", "__closure__",
    "__subclasses__", "__builtins__", "__traceback__", "_getframe", "settrace",
    "setprofile", "addaudithook", "__import__", "rmtree", "unlink", "rmdir", "environ",
}
_STREAM_ATTRS = {"Stream", "stream", "set_stream", "ExternalStream"}


class _Checker(ast.NodeVisitor):
    def __init__(self, language: KernelLanguage = TRITON) -> None:
        self.language = language
        self.problem: str | None = None
        self.os_aliases = {"os"}
        self.jit_functions: set[str] = set()

    def _flag(self, node: ast.AST, message: str) -> None:
        if self.problem is None:
            line = getattr(node, "lineno", None)
            self.problem = message + (f" (line {line})" if line else "")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = alias.name.split(".")[0]
            if root in _FORBIDDEN_MODULES:
                self._flag(node, f"imports {alias.name}, which a kernel has no use for")
            if alias.name == "os" and alias.asname:
                self.os_aliases.add(alias.asname)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        root = module.split(".")[0]
        if root in _FORBIDDEN_MODULES:
            self._flag(node, f"imports from {module}, which a kernel has no use for")
        if root == "os" or module == "sys":
            for alias in node.names:
                if alias.name in _FORBIDDEN_OS_CALLS or alias.name in _FORBIDDEN_ATTRS:
                    self._flag(node, f"imports {module}.{alias.name}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _FORBIDDEN_BUILTINS:
            self._flag(node, f"uses {node.id}(), which can run code the check never saw")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        base = dotted_name(node.value)
        if base in self.os_aliases and node.attr in _FORBIDDEN_OS_CALLS:
            what = ("reads environment variables" if node.attr in ("environ", "environb",
                                                                   "getenv", "getenvb")
                    else f"calls os.{node.attr}")
            self._flag(node, f"{what}, which a kernel has no business doing")
        elif node.attr in _FORBIDDEN_ATTRS:
            self._flag(node, f"touches .{node.attr} (interpreter internals, files or "
                             "the environment)")
        elif node.attr in _STREAM_ATTRS and base.endswith("cuda"):
            self._flag(node, f"uses {base}.{node.attr}: work on a side stream escapes timing")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and (
                    first.value.startswith(("/", "~")) or ".." in first.value):
                self._flag(node, f"opens {first.value!r}, outside its sandbox directory")
        self.generic_visit(node)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if any(self.language.is_kernel_decorator(d) for d in node.decorator_list):
            self.jit_functions.add(node.name)
        self.generic_visit(node)

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function


def static_check(code: str, language: str = "triton") -> str | None:
    """Why `code` must be rejected before it runs (one sentence), or None if it may run.

    `language` is the task's kernel language (``Task.language``). A syntax error is not a
    rejection: the worker reports it as ``compile_error``.
    """
    try:
        tree = parse(code)
    except (SyntaxError, ValueError):
        return None
    lang = kernel_language(language)
    checker = _Checker(lang)
    checker.visit(tree)
    if checker.problem is not None:
        return f"static check: the candidate {checker.problem}"
    if not checker.jit_functions:
        decorator = f"@{lang.decorator_modules[0]}.{lang.decorators[0]}"
        return (f"static check: the candidate defines no {decorator} kernel "
                f"(torch ops instead of a {lang.name.capitalize()} kernel)")
    if not lang.launches(tree):
        return (f"static check: the candidate never launches a {lang.name.capitalize()} kernel "
                f"(no {lang.launch} call)")
    return None


def static_check_for_task(code: str, task_spec: str, task_name: str) -> str | None:
    """`static_check` in the task's kernel language, then its source's own rules, if any
    (one sentence, or None). A task the source cannot find is the worker's to report."""
    from live.evaluator.task_source import task_language

    problem = static_check(code, task_language(task_spec, task_name))
    if problem is not None:
        return problem
    from live.tasks.sources import parse_spec, source_module

    try:
        prefix, arg = parse_spec(task_spec)
        extra = getattr(source_module(prefix), "static_check", None)
    except ValueError:
        return None
    if extra is None:
        return None
    try:
        return extra(arg, task_name, code)
    except (KeyError, ValueError, OSError):
        return None
