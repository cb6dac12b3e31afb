"""python -m report {run,compare,combine,sweep,tune,overhead} …: the report's one entry point, a subcommand per document
(each in report/commands/):

    python -m report run RUN_FOLDER [--warmup SECONDS|auto]     report.html, summary.md, verdict.json of one run
    python -m report compare OUT_FOLDER RUN_FOLDER...           several runs side by side (compare.md, .html)
    python -m report combine SERIES_FOLDER TRIAL_FOLDER...      the trials of a --repeat N run, combined
    python -m report sweep SWEEP_FOLDER                         a sweep's or an ablation's report (sweep.md, .html)
    python -m report tune TUNE_FOLDER                           a tune's report (tune.md, .html)
    python -m report overhead RUN_WITH RUN_WITHOUT              an instrument's cost to the JVM
    python -m report runs RESULTS                               the index of runs (RESULTS/index.sqlite), as a table
    python -m report history RESULTS OUT                        histories of comparable runs, change points
    python -m report gate FOLDER --gate 'tps>=+10%'             a verdict against gates (exit 3 when one fails)

Bad input (an option, a folder that is not what the command reads, a gate that cannot be read) is refused with one
line on stderr, `python -m report: MESSAGE`, and exit 2 (report/errors.py).
"""
from __future__ import annotations

import argparse
import sys
from importlib import import_module

from report.errors import BadInput, ReportError

# Each command's module is imported only when it is the one asked for: `runs --add` and `gate`, which a lab run calls
# after its report, took 8-10 s each to import the report's statistics (arch, scipy, pandas) that they never use.
COMMANDS: dict[str, str] = {
    "run": "one run's report.html, summary.md and verdict.json",
    "compare": "several runs side by side",
    "combine": "the trials of a --repeat N run, combined",
    "sweep": "a sweep's or an ablation's report",
    "tune": "a tune's report: the answer, its confirmations, the trials, what matters",
    "overhead": "an instrument's cost to the JVM, from a run with it and one without",
    "runs": "the index of runs, rebuilt from the folders, as a table",
    "history": "the histories of comparable runs and their change points",
    "gate": "a run's or a series' verdict against gates, for a pipeline",
}


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose refusals (an unknown option, a missing argument, a value its type refuses) are the
    report's BadInput: one line naming the command, not a usage text and SystemExit."""
    command = ""        # the top parser's: the command asked for (its own refusals, e.g. an unknown option, name it)

    def error(self, message: str):
        command = self.prog.removeprefix("python -m report").strip() or self.command
        raise BadInput(f"{command}: {message} (python -m report {command} --help)" if command else
                       f"{message} (python -m report --help)")


def parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser: one subparser per command, the chosen one's with its module's arguments and docstring (None: the
    commands listed, as for --help)."""
    top = Parser(prog="python -m report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.command = chosen or ""
    commands = top.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for name, summary in COMMANDS.items():
        if name != chosen:
            commands.add_parser(name, help=summary)
            continue
        module = import_module(f"report.commands.{name}")
        sub = commands.add_parser(name, help=summary, description=module.__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(module=module, parser=sub)
    return top


def main(argv: list[str] | None = None) -> int:
    """The command's exit code; a ReportError said in one line on stderr, its exit code returned."""
    argv = sys.argv[1:] if argv is None else argv
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        args = parser(chosen).parse_args(argv)
        return args.module.main(args, args.parser)
    except ReportError as refused:
        print(f"python -m report: {refused}", file=sys.stderr)
        return refused.exit_code


if __name__ == "__main__":
    sys.exit(main())
