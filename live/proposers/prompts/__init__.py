"""Prompt templates (package data): ``system.txt``, ``user.txt`` (the frame) and one guidance file
per strategy, ``<strategy>.txt``, and ``k0.txt`` (the first kernel, written from the
reference). Placeholders use ``string.Template`` syntax (``$name``)."""
