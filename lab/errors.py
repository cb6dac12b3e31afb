"""The lab's one error family. Every failure the user must read is a LabError: one message naming the file, field,
option or machine concerned and what to do, printed by the command line without a traceback. Its class says the
exit code: BadInput (2) is input refused before anything changed; any other LabError (1) is a failure on the way.

Each wing keeps its own subclass (BoxError, ProvisionError, …) so a caller can catch one kind and let the rest
pass; the command line catches the family (lab/cli/__init__.py)."""
from __future__ import annotations


class LabError(Exception):
    """A failure the user must read: printed as one message, exit 1."""
    exit_code = 1


class BadInput(LabError, ValueError):
    """Input refused before anything changed (an option, a file of the user's, a value): exit 2. A ValueError too,
    so a check written against ValueError still catches it."""
    exit_code = 2
