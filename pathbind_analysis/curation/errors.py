"""The error curation readers raise for unusable input; its message names the file, line, field and fix."""


class CurationInputError(ValueError):
    """An input file the curation commands cannot use."""
