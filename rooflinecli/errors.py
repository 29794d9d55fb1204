"""Errors a user can act on: shown as one line, exit code 2."""

import click


class RooflineError(click.ClickException):
    """Bad input or an environment problem (no GPU, no ncu, bad file). Exit code 2."""

    exit_code = 2


class GateFailure(click.ClickException):
    """A performance gate failed. Exit code 1."""

    exit_code = 1
