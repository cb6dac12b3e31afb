"""The commands of `python -m report` (see report/__main__.py), one module each: read the folders, analyse,
render, write the files. Imports any layer; no layer imports it."""
