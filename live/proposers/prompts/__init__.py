"""Prompt templates (package data): ``system.txt``, ``user.txt`` (the frame) and one guidance file
per strategy, ``<strategy>.txt``. Placeholders use ``string.Template`` syntax (``$name``)."""
