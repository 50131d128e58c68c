"""mmcv-style configs: `model.cfg` (the checkpoint's config) and `Config.fromfile`.

    cfg = model.cfg                       # the mmcv Config text saved in the checkpoint's meta
    cfg.model.test_cfg.mode               # attribute access, as mmcv's Config / ConfigDict
    cfg['model']['decode_head']['num_classes']
    cfg.data.test.pipeline[1].img_scale
    print(cfg.pretty_text); cfg.dump('config.py')

The text is parsed by the library (formats/pyconfig.h: mmcv's literal subset -- dict(...), {...},
lists, tuples, strings, numbers, True / False / None, names of earlier variables), without
running it as Python. Tuples become lists. `_base_` files are not merged (a checkpoint's config
is already the merged one).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, Optional, Union

from . import _lib

__all__ = ['Config', 'ConfigDict']


class ConfigDict(dict):
    """A dict whose keys are also attributes (mmcv's ConfigDict): `d.a.b` is `d['a']['b']`.
    Nested dicts (also inside lists) are ConfigDicts; a missing attribute raises
    AttributeError, a missing item KeyError."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for k, v in dict.items(self):
            dict.__setitem__(self, k, _wrap(v))

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name)) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, _wrap(value))

    def to_dict(self) -> Dict[str, Any]:
        """A plain (nested) dict copy."""
        return _unwrap(self)

    def __deepcopy__(self, memo: Dict[int, Any]) -> 'ConfigDict':
        return ConfigDict(json.loads(json.dumps(_unwrap(self))))

    def __reduce__(self) -> Any:
        return (ConfigDict, (_unwrap(self),))


def _wrap(v: Any) -> Any:
    if isinstance(v, dict) and not isinstance(v, ConfigDict):
        return ConfigDict(v)
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


def _unwrap(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _unwrap(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_unwrap(x) for x in v]
    return v


def _py(v: Any, indent: int = 0) -> str:
    """A value as mmcv config text (dict(...) for string keys that are identifiers)."""
    pad = ' ' * (indent + 4)
    if isinstance(v, dict):
        if not v:
            return 'dict()'
        if all(isinstance(k, str) and k.isidentifier() for k in v):
            items = ['%s%s=%s' % (pad, k, _py(x, indent + 4)) for k, x in v.items()]
            return 'dict(\n' + ',\n'.join(items) + ')'
        items = ['%s%r: %s' % (pad, k, _py(x, indent + 4)) for k, x in v.items()]
        return '{\n' + ',\n'.join(items) + '}'
    if isinstance(v, list):
        return '[' + ', '.join(_py(x, indent + 4) for x in v) + ']'
    return repr(v)


class Config:
    """mmcv's Config, read-only in spirit: attribute and item access to the config's top-level
    names (`cfg.model`, `cfg['data']`), `filename`, `text` (the source text), `pretty_text`,
    `dump()`, `get()`, `merge_from_dict()`, iteration and `in` over the top-level names."""

    def __init__(self, cfg_dict: Optional[Dict[str, Any]] = None, filename: Optional[str] = None,
                 text: Optional[str] = None) -> None:
        if cfg_dict is None:
            cfg_dict = {}
        elif not isinstance(cfg_dict, dict):
            raise _lib.ArgumentTypeError('cfg_dict must be a dict, not %s' % type(cfg_dict).__name__)
        object.__setattr__(self, '_cfg_dict', ConfigDict(cfg_dict))
        object.__setattr__(self, '_filename', None if filename is None else os.fspath(filename))
        object.__setattr__(self, '_text', text)

    @staticmethod
    def fromstring(cfg_str: str, file_format: str = '.py', name: str = 'config') -> 'Config':
        """Parse mmcv config text ('.py' syntax, or '.json'); errors name `name`, line and column."""
        if file_format == '.json':
            return Config(json.loads(cfg_str), text=cfg_str)
        if file_format != '.py':
            raise _lib.ArgumentError("file_format must be '.py' or '.json', not %r" % (file_format,))
        out = _lib.c_void_p()
        try:
            with _lib.Ctx() as c:
                c.check(_lib.lib.rv_py_config_json(_lib.enc(cfg_str), _lib.enc(name), _lib.ctypes.byref(out), c.ctx))
            data = _lib.ctypes.string_at(out)
        finally:
            if out.value:
                _lib.lib.rv_py_free(out)
        return Config(json.loads(data), filename=None, text=cfg_str)

    @staticmethod
    def fromfile(filename: Union[str, 'os.PathLike[str]']) -> 'Config':
        """Read a config file (.py in mmcv's literal subset, or .json)."""
        path = os.fspath(filename)
        with open(path, encoding='utf-8') as f:
            text = f.read()
        cfg = Config.fromstring(text, '.json' if path.endswith('.json') else '.py', name=path)
        object.__setattr__(cfg, '_filename', path)
        return cfg

    @property
    def filename(self) -> Optional[str]:
        """Where the config came from (a file, or '<checkpoint>:config'), or None."""
        return self._filename

    @property
    def text(self) -> str:
        """The config's source text (as saved in the checkpoint), else pretty_text."""
        return self._text if self._text is not None else self.pretty_text

    @property
    def pretty_text(self) -> str:
        """The config as mmcv config text (the source text when there is one)."""
        if self._text is not None:
            return self._text
        return ''.join('%s = %s\n' % (k, _py(v)) for k, v in self._cfg_dict.items())

    def dump(self, file: Optional[Union[str, 'os.PathLike[str]']] = None) -> Optional[str]:
        """The text (no file), or write it to file: JSON for a .json name, else config text."""
        if file is None:
            return self.pretty_text
        path = os.fspath(file)
        data = json.dumps(self._cfg_dict.to_dict(), indent=2) if path.endswith('.json') else self.pretty_text
        with open(path, 'w', encoding='utf-8') as f:
            f.write(data)
        return None

    def merge_from_dict(self, options: Dict[str, Any]) -> None:
        """mmcv's merge: keys with dots ('model.test_cfg.mode') set nested values."""
        for key, value in options.items():
            d = self._cfg_dict
            parts = key.split('.')
            for p in parts[:-1]:
                if p not in d or not isinstance(d[p], dict):
                    d[p] = ConfigDict()
                d = d[p]
            d[parts[-1]] = value

    def to_dict(self) -> Dict[str, Any]:
        """The config as a plain nested dict."""
        return self._cfg_dict.to_dict()

    def get(self, key: str, default: Any = None) -> Any:
        """cfg.get(name, default), as dict.get."""
        return self._cfg_dict.get(key, default)

    def keys(self) -> Any:
        """The top-level names."""
        return self._cfg_dict.keys()

    def items(self) -> Any:
        """(name, value) pairs of the top level."""
        return self._cfg_dict.items()

    def values(self) -> Any:
        """The top-level values."""
        return self._cfg_dict.values()

    def __getattr__(self, name: str) -> Any:
        if name.startswith('__') or name in ('_cfg_dict', '_filename', '_text'):
            raise AttributeError(name)
        return getattr(self._cfg_dict, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._cfg_dict[name] = value

    def __getitem__(self, name: str) -> Any:
        return self._cfg_dict[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self._cfg_dict[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self._cfg_dict

    def __iter__(self) -> Iterator[str]:
        return iter(self._cfg_dict)

    def __len__(self) -> int:
        return len(self._cfg_dict)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return 'Config (path: %s): %s' % (self._filename, self._cfg_dict.to_dict())
