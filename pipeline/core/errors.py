"""Errors a user can act on. The CLI prints them as one line, without a traceback unless --debug."""


class UserError(Exception):
    """A problem the user can fix (missing input, bad option, missing optional dependency...)."""


def missing_dependency(module: str, pip_name: str, purpose: str) -> UserError:
    return UserError(f"{purpose} needs the '{module}' package: pip install {pip_name}")
