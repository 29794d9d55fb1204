"""The tool's errors: plain exceptions, no click. The CLI maps each to one line and an exit code.

Exit codes (README, docs/cli.md): 0 ok, 1 a check or gate failed, 2 bad input or environment,
3 inconclusive (a gate that cannot tell a regression from noise).
"""


class RooflineError(Exception):
    """Bad input or an environment problem (no GPU, no ncu, bad file). Exit code 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        return self.message


class GateFailure(RooflineError):
    """A check or performance gate failed. Exit code 1."""

    exit_code = 1


class Inconclusive(RooflineError):
    """A verdict the measurements cannot support either way (too noisy). Exit code 3."""

    exit_code = 3


class TracingUnavailable(RooflineError):
    """No kernel tracer works here (neither cupti-python nor PyTorch's profiler); the message
    says why. Exit code 2."""
