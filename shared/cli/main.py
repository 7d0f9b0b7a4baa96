"""The `rummy` command: one subcommand per tool, each in its own module."""

from __future__ import annotations

import argparse
import sys

from shared.cli.io import run_json_command


def build_parser() -> argparse.ArgumentParser:
    """All subcommands and their flags."""
    parser = argparse.ArgumentParser(
        prog="rummy", description="Referee, score and replay Robbers' Rummy and Rummikub."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser(
        "judge",
        help="judge one meld or one play (JSON on stdin, verdict on stdout)",
        description="Reads a meld or a position and a proposed layout as JSON on stdin; prints "
        "the verdict as JSON. Exit 2 when the input is not a position at all.",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "judge":
        from shared.cli.judge import judge

        return run_json_command(judge, "judge")
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
