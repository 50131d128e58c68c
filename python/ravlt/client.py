"""A client of `ravlt serve` on the standard library only (urllib): no model, no libravlt.

    from ravlt import Client
    c = Client('http://127.0.0.1:8080')                   # token='...' with --token-file
    r = c.predict('photo.jpg')                            # the only model, or model='name'
    for d in r['detections']: print(d['name'], d['score'], d['bbox'])
    png = c.predict('photo.jpg', format='overlay')        # PNG bytes of the drawing
    out = c.infer('photo.jpg', model='demo-det')          # KServe v2: {'boxes': ..., ...}

An image is a file name, the bytes of an encoded image (JPEG, PNG, WebP, BMP) or an HxWx3
uint8 BGR array (sent as BMP, lossless). Errors raise ServerError with the server's status
and its one-line message.
"""
import base64
import json
import os
import struct
import urllib.error
import urllib.parse
import urllib.request

__all__ = ['Client', 'ServerError']


class ServerError(RuntimeError):
    """An answer other than 2xx: .status (the HTTP status) and .message (the server's error)."""

    def __init__(self, status, message):
        super().__init__('%d: %s' % (status, message))
        self.status = status
        self.message = message


def _bmp(a):
    """An HxWx3 uint8 BGR array (anything with .shape and .tobytes, rows top first) as a BMP."""
    h, w, c = a.shape
    if c != 3 or str(getattr(a, 'dtype', 'uint8')) != 'uint8':
        raise ValueError('image: an HxWx3 uint8 BGR array is needed, not %s %s' % (getattr(a, 'dtype', '?'), a.shape))
    raw = a.tobytes()
    stride = (3 * w + 3) & ~3
    pad = b'\0' * (stride - 3 * w)
    rows = b''.join(raw[y * 3 * w:(y + 1) * 3 * w] + pad for y in range(h - 1, -1, -1))
    head = struct.pack('<2sIHHI', b'BM', 54 + len(rows), 0, 0, 54)
    info = struct.pack('<IiiHHIIiiII', 40, w, h, 1, 24, 0, len(rows), 2835, 2835, 0, 0)
    return head + info + rows


def _content_type(data):
    if data[:3] == b'\xff\xd8\xff':
        return 'image/jpeg'
    if data[:8] == b'\x89PNG\r\n\x1a\n':
        return 'image/png'
    if data[:4] == b'RIFF' and data[8:12] == b'WEBP':
        return 'image/webp'
    if data[:2] == b'BM':
        return 'image/bmp'
    return 'application/octet-stream'


def _encoded(img):
    if isinstance(img, (bytes, bytearray, memoryview)):
        return bytes(img)
    if isinstance(img, (str, os.PathLike)):
        with open(img, 'rb') as f:
            return f.read()
    if hasattr(img, 'shape'):
        return _bmp(img)
    raise TypeError('image: a file name, encoded bytes or an HxWx3 uint8 array, not %s' % type(img).__name__)


class Client:
    """`ravlt serve` at url (e.g. 'http://127.0.0.1:8080'); token: its --token-file's token."""

    def __init__(self, url='http://127.0.0.1:8080', token=None, timeout=120.0):
        self.url = url.rstrip('/')
        self.token = token
        self.timeout = timeout
        self._models = None

    def _request(self, path, data=None, ctype=None):
        req = urllib.request.Request(self.url + path, data=data, method='POST' if data is not None else 'GET')
        if ctype:
            req.add_header('Content-Type', ctype)
        if self.token:
            req.add_header('Authorization', 'Bearer ' + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.read(), r.headers.get('Content-Type', '')
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                msg = json.loads(body)['error']
            except (ValueError, KeyError, TypeError):
                msg = body.decode('utf-8', 'replace').strip() or e.reason
            raise ServerError(e.code, msg) from None

    def _json(self, path, data=None, ctype=None):
        body, _ = self._request(path, data, ctype)
        return json.loads(body)

    def ready(self):
        """True when the server answers /v2/health/ready with 200."""
        try:
            self._request('/v2/health/ready')
            return True
        except (ServerError, OSError):
            return False

    def models(self):
        """The served models: [{'name', 'task', 'architecture', 'num_classes', 'masks'}]."""
        self._models = self._json('/v1/models')['models']
        return self._models

    def _model(self, model):
        if model is not None:
            return model
        names = [m['name'] for m in (self._models or self.models())]
        if len(names) != 1:
            raise ValueError('the server has %d models (%s): name one with model=' % (len(names), ', '.join(names)))
        return names[0]

    def predict(self, img, model=None, score_thr=None, format='json'):
        """POST /v1/models/MODEL/predict: format 'json' (a dict: detections or classes),
        'png' (the label PNG of a segmentation model, bytes) or 'overlay' (PNG bytes)."""
        data = _encoded(img)
        q = {'format': format}
        if score_thr is not None:
            q['score_thr'] = repr(float(score_thr))
        path = '/v1/models/%s/predict?%s' % (urllib.parse.quote(self._model(model), safe=''), urllib.parse.urlencode(q))
        body, _ = self._request(path, data, _content_type(data))
        return json.loads(body) if format == 'json' else body

    def infer(self, img, model=None, score_thr=None, outputs=None):
        """POST /v2/models/MODEL/infer (KServe v2): {output name: (data as a flat list, shape)}
        ... as numpy arrays when numpy is there."""
        req = {'inputs': [{'name': 'image', 'datatype': 'BYTES', 'shape': [1],
                           'data': [base64.b64encode(_encoded(img)).decode('ascii')]}]}
        if score_thr is not None:
            req['parameters'] = {'score_thr': float(score_thr)}
        if outputs:
            req['outputs'] = [{'name': n} for n in outputs]
        path = '/v2/models/%s/infer' % urllib.parse.quote(self._model(model), safe='')
        r = self._json(path, json.dumps(req).encode(), 'application/json')
        try:
            import numpy as np
        except ImportError:
            np = None
        out = {}
        for o in r['outputs']:
            if np is not None and o['datatype'] != 'BYTES':
                dt = np.float32 if o['datatype'] == 'FP32' else np.int32
                out[o['name']] = np.asarray(o['data'], dtype=dt).reshape(o['shape'])
            else:
                out[o['name']] = (o['data'], o['shape'])
        return out
