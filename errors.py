"""The root of dlc's exceptions: every error dlc raises on purpose derives from DlcError."""


class DlcError(Exception):
    """Base class of the errors dlc reports to its users."""
