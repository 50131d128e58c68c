"""Exception classes of ravlt.cocotools: each derives from ravlt.Error (the library's errors)
and from the class pycocotools raises in the same situation, so that existing ``except
ValueError`` / ``except AssertionError`` / ... clauses keep catching them."""
from .._lib import Error

__all__ = ['CocoValueError', 'CocoTypeError', 'CocoAssertionError', 'CocoKeyError', 'CocoIndexError',
           'CocoError', 'raise_as', 'os_error']


class CocoError(Error):
    """Where pycocotools raises a bare Exception."""


class CocoValueError(Error, ValueError):
    """Where pycocotools raises ValueError (mask dtype or layout, invalid RLE, malformed JSON)."""


class CocoTypeError(Error, TypeError):
    """Where pycocotools raises TypeError."""


class CocoAssertionError(Error, AssertionError):
    """Where pycocotools fails an assert (results on images outside the ground truth, ...)."""


class CocoKeyError(Error, KeyError):
    """Where pycocotools raises KeyError (a missing field)."""
    __str__ = BaseException.__str__


class CocoIndexError(Error, IndexError):
    """Where pycocotools raises IndexError."""


def os_error(e: OSError) -> OSError:
    """e (FileNotFoundError, IsADirectoryError, PermissionError, ...) as the package's file error
    of the same kind (ravlt.MissingFileError, IsAFolderError, FilePermissionError, FileError:
    each also the builtin), with the same errno, message and file name."""
    from .. import _lib
    cls = (_lib.MissingFileError if isinstance(e, FileNotFoundError) else
           _lib.IsAFolderError if isinstance(e, IsADirectoryError) else
           _lib.FilePermissionError if isinstance(e, PermissionError) else _lib.FileError)
    return cls(e.errno, e.strerror, e.filename)


def raise_as(cls, e):
    """Re-raise the library's Error e as cls (same message, e as the cause)."""
    raise cls(str(e)) from e


def classify_load_error(msg):
    """The pycocotools exception class for a library message about a JSON file or list."""
    m = msg.lower()
    if 'is not in the ground truth' in m:
        return CocoAssertionError
    if 'must be a json list' in m or 'not an array' in m:
        return CocoAssertionError
    if "missing" in m or "no '" in m:
        return CocoKeyError
    return CocoValueError
