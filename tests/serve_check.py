"""`ravlt serve` end to end (tests/cli/test_serve.sh and test_serve_smoke.sh run it): servers
on loopback, each on a free port the server picks (--port 0, read from its 'listening on'
line); every wait bounded.

    python3 tests/serve_check.py RAVLT_BIN WORK_DIR [CHECK...]

Predictions are compared with the CLI's outputs for the same images: `ravlt detect --json`
entries equal (numbers equal as parsed), `ravlt segment`'s label PNG and overlay PNG byte for
byte, the detection drawing within JPEG noise of `ravlt detect`'s (the CLI writes JPEG), the
stream events equal to `ravlt video --json`'s lines for the same frames.
"""
import base64
import http.client
import json
import os
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import zlib

import numpy as np

BIN, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
ONLY = set(sys.argv[3:])
SAMPLES = '/usr/share/doc/opencv-doc/examples/data'
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'serve')
os.environ.pop('http_proxy', None)
os.environ.pop('HTTP_PROXY', None)
os.environ['no_proxy'] = os.environ['NO_PROXY'] = '*'
os.environ.setdefault('OMP_NUM_THREADS', '2')
# the servers run without python3's sanitizer preload and with the suite's ASAN_OPTIONS (leaks)
SERVER_ENV = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'ASAN_OPTIONS')}
if os.environ.get('SERVE_ASAN_OPTIONS'):
    SERVER_ENV['ASAN_OPTIONS'] = os.environ['SERVE_ASAN_OPTIONS']


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def run(*args, **kw):
    r = subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=kw.pop('timeout', 300), **kw)
    check(r.returncode == 0, 'ravlt %s: exit %d\n%s' % (' '.join(args), r.returncode, r.stderr))
    return r


class Server:
    """`ravlt serve --port 0 ARGS`, started and waited for (at most 60 s)."""

    def __init__(self, *args, expect_fail=False):
        self.log = os.path.join(WORK, 'serve-%d.log' % time.monotonic_ns())
        self.err = open(self.log, 'w+')
        self.p = subprocess.Popen([BIN, 'serve', '--port', '0'] + list(args), stdout=subprocess.DEVNULL, stderr=self.err, env=SERVER_ENV)
        self.port = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            text = self.text()
            m = re.search(r'listening on https?://[^ ]*:(\d+)/', text)
            if m:
                self.port = int(m.group(1))
                return
            if self.p.poll() is not None:
                if expect_fail:
                    return
                raise AssertionError('ravlt serve %s exited %d before listening:\n%s' % (' '.join(args), self.p.returncode, text))
            time.sleep(0.02)
        self.p.kill()
        raise AssertionError('ravlt serve %s: not listening after 60 s:\n%s' % (' '.join(args), self.text()))

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise AssertionError('ravlt serve did not stop within %d s of signal %d:\n%s' % (timeout, sig, self.text()))
        self.err.close()
        return rc

    def conn(self, timeout=60):
        return http.client.HTTPConnection('127.0.0.1', self.port, timeout=timeout)

    def req(self, method, path, body=None, headers=None, timeout=60):
        c = self.conn(timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def get_json(self, path, status=200, headers=None):
        s, h, b = self.req('GET', path, headers=headers)
        check(s == status, 'GET %s: %d, not %d: %r' % (path, s, status, b[:300]))
        check(h.get('content-type', '').startswith('application/json'), 'GET %s: content type %s' % (path, h.get('content-type')))
        return json.loads(b)

    def predict(self, model, data, query='', ctype='image/jpeg', headers=None):
        hd = {'Content-Type': ctype} if ctype else {}
        hd.update(headers or {})
        return self.req('POST', '/v1/models/%s/predict%s' % (model, query), body=data, headers=hd)


def error_of(status, headers, body, want, what):
    check(status == want, '%s: status %d, not %d: %r' % (what, status, want, body[:300]))
    check(headers.get('content-type', '').startswith('application/json'), '%s: content type %s' % (what, headers.get('content-type')))
    j = json.loads(body)
    check(set(j) == {'error'} and isinstance(j['error'], str) and j['error'] and '\n' not in j['error'],
          '%s: the body is not {"error": "one line"}: %r' % (what, body))
    return j['error']


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def png_header(w, h):
    """A PNG signature and IHDR claiming w x h (no pixel data follows)."""
    ihdr = struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)
    return b'\x89PNG\r\n\x1a\n' + struct.pack('>I', 13) + b'IHDR' + ihdr + struct.pack('>I', zlib.crc32(b'IHDR' + ihdr))


def multipart(field, name, data, ctype='image/jpeg'):
    b = '----ravlttest%d' % time.monotonic_ns()
    body = ('--%s\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n'
            '--%s\r\nContent-Disposition: form-data; name="%s"; filename="%s"\r\nContent-Type: %s\r\n\r\n'
            % (b, b, field, name, ctype)).encode() + data + ('\r\n--%s--\r\n' % b).encode()
    return body, 'multipart/form-data; boundary=' + b


def concurrently(n, fn):
    out = [None] * n

    def one(i):
        try:
            out[i] = fn(i)
        except Exception as e:  # noqa: BLE001 - collected and asserted on
            out[i] = e
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
        check(not t.is_alive(), 'a request thread did not finish within 120 s')
    return out


# ---- the data: synthetic images and the CLI's outputs -----------------------------------------
def prepare():
    d = {}
    run('synth', '--task', 'det', '--out-dir', os.path.join(WORK, 'det'), '--count', '3', '-q')
    run('synth', '--task', 'seg', '--out-dir', os.path.join(WORK, 'seg'), '--count', '3', '-q')
    run('synth', '--task', 'seg', '--out-dir', os.path.join(WORK, 'big'), '--count', '1', '--size', '1200x1600', '-q')
    d['det'] = sorted(os.path.join(WORK, 'det', 'images', f) for f in os.listdir(os.path.join(WORK, 'det', 'images')))
    sd = os.path.join(WORK, 'seg', 'images', 'validation')
    d['seg'] = sorted(os.path.join(sd, f) for f in os.listdir(sd))
    bd = os.path.join(WORK, 'big', 'images', 'validation')
    d['big'] = os.path.join(bd, os.listdir(bd)[0])
    # the CLI with the servers' thread count (the detector's last bits depend on it)
    run('-q', '--threads', '2', 'detect', '--json', os.path.join(WORK, 'det.json'), '--out-dir', os.path.join(WORK, 'detout'), *d['det'])
    run('-q', '--threads', '2', 'segment', '--out-dir', os.path.join(WORK, 'segout'), *d['seg'])
    entries = json.load(open(os.path.join(WORK, 'det.json')))
    d['det_entries'] = {p: [e for e in entries if e['image_id'] == i + 1] for i, p in enumerate(d['det'])}
    check(sum(len(v) for v in d['det_entries'].values()) > 0, 'the demo detector found nothing on the synthetic images')
    return d


def stem(p):
    return os.path.splitext(os.path.basename(p))[0]


# ---- checks -----------------------------------------------------------------------------------
def check_predict_equals_cli(S, d):
    import ravlt
    for p in d['det']:
        s, h, b = S.predict('demo-det', read(p))
        check(s == 200 and h['content-type'].startswith('application/json'), 'predict demo-det %s: %d %r' % (p, s, b[:300]))
        j = json.loads(b)
        check(j['model'] == 'demo-det', 'model name %r' % j['model'])
        check(j['image'] == {'height': 240, 'width': 320}, 'image %r' % j['image'])
        check(set(j['timing_ms']) >= {'inference'}, 'timing_ms %r' % j['timing_ms'])
        want = [{k: v for k, v in e.items() if k != 'image_id'} for e in d['det_entries'][p]]
        got = [{k: v for k, v in e.items() if k != 'name'} for e in j['detections']]
        check(got == want, '%s: the detections differ from `ravlt detect --json`:\n%r\n%r' % (p, got[:3], want[:3]))
        names = ['circle', 'triangle', 'square', 'hexagon', 'ellipse']
        check(all(e['name'] == names[e['category_id'] - 1] for e in j['detections']), 'class names')
        # the threshold keeps the entries with score >= T, in the same order
        s, _, b = S.predict('demo-det', read(p), '?score_thr=0.3')
        check(s == 200 and json.loads(b)['detections'] == [e for e in j['detections'] if e['score'] >= 0.3], 'score_thr=0.3')
        # the drawing: `ravlt detect`'s (a JPEG there, so within its noise), not the input
        s, h, b = S.predict('demo-det', read(p), '?format=overlay')
        check(s == 200 and h['content-type'] == 'image/png' and b[:8] == b'\x89PNG\r\n\x1a\n', 'overlay: %d %s' % (s, h.get('content-type')))
        ov = os.path.join(WORK, stem(p) + '_srv.png')
        open(ov, 'wb').write(b)
        a = ravlt.imread(ov).astype(np.int32)
        cli = ravlt.imread(os.path.join(WORK, 'detout', stem(p) + '_det.jpg')).astype(np.int32)
        src = ravlt.imread(p).astype(np.int32)
        check(a.shape == cli.shape == src.shape, 'overlay shape %s vs %s' % (a.shape, cli.shape))
        diff, drawn = np.abs(a - cli).mean(), np.abs(cli - src).mean()
        check(diff < 2.5 and diff < drawn / 2, '%s: overlay differs from the CLI drawing by %.2f (the drawing from the image: %.2f)'
              % (p, diff, drawn))
    for p in d['seg']:
        out = os.path.join(WORK, 'segout', stem(p))
        s, h, b = S.predict('demo', read(p), '?format=png')
        check(s == 200 and h['content-type'] == 'image/png', 'png: %d' % s)
        check(b == read(out + '.png'), '%s: the label PNG differs from `ravlt segment`\'s' % p)
        s, _, b = S.predict('demo', read(p), '?format=overlay')
        check(s == 200 and b == read(out + '_overlay.png'), '%s: the overlay PNG differs from `ravlt segment`\'s' % p)
        lab = ravlt.imread(out + '.png', gray=True).astype(np.int64) - 1
        j = json.loads(S.predict('demo', read(p))[2])
        want = [{'label': int(k), 'name': ['background', 'circle', 'triangle', 'square', 'hexagon', 'ellipse'][k],
                 'pixels': int((lab == k).sum())} for k in np.unique(lab)]
        check(j['classes'] == want and j['model'] == 'demo', '%s: classes %r, not %r' % (p, j['classes'], want))
    # multipart/form-data with a 'file' field (and another field), and the Python client
    p = d['det'][0]
    raw = json.loads(S.predict('demo-det', read(p))[2])['detections']
    body, ctype = multipart('file', 'x.jpg', read(p))
    s, _, b = S.predict('demo-det', body, ctype=ctype)
    check(s == 200 and json.loads(b)['detections'] == raw, 'multipart: %d %r' % (s, b[:200]))
    s, h, b = S.predict('demo-det', multipart('image', 'x.jpg', read(p))[0], ctype=multipart('image', 'x', b'')[1])
    error_of(s, h, b, 400, 'multipart without file')
    for ct in ('application/octet-stream', None, 'image/jpeg; charset=binary'):
        s, _, b = S.predict('demo-det', read(p), ctype=ct)
        check(s == 200 and json.loads(b)['detections'] == raw, 'Content-Type %s: %d' % (ct, s))
    c = ravlt.Client('http://127.0.0.1:%d' % S.port)
    check(c.ready(), 'Client.ready()')
    check(c.predict(p, model='demo-det')['detections'] == raw, 'Client.predict(path)')
    check(c.predict(read(p), model='demo-det')['detections'] == raw, 'Client.predict(bytes)')
    arr = ravlt.imread(p)
    check(c.predict(arr, model='demo-det')['detections'] == raw, 'Client.predict(array) (BMP: lossless)')
    check(c.predict(d['seg'][0], model='demo', format='png') == read(os.path.join(WORK, 'segout', stem(d['seg'][0]) + '.png')),
          'Client.predict(format=png)')
    try:
        c.predict(p, model='nope')
        check(False, 'Client: no error for an unknown model')
    except ravlt.ServerError as e:
        check(e.status == 404 and 'nope' in e.message, 'Client error %r' % e)


def check_tiles(S, d):
    # tile=HxW on predict: the numbers of `ravlt detect --tile` / `segment --tile` (docs/large-images.md)
    p = d['det'][0]
    tiled = os.path.join(WORK, 'tiled')
    os.makedirs(tiled, exist_ok=True)
    run('-q', '--threads', '2', 'detect', '--no-draw', '--tile', '96x128', '--tile-merge', 'nmm', '--tile-full',
        '--json', os.path.join(tiled, 'det.json'), p)
    want = [{k: v for k, v in e.items() if k != 'image_id'} for e in json.load(open(os.path.join(tiled, 'det.json')))]
    s, _, b = S.predict('demo-det', read(p), '?tile=96x128&tile_merge=nmm&tile_full=1')
    check(s == 200, 'tiled predict: %d %r' % (s, b[:300]))
    got = [{k: v for k, v in e.items() if k != 'name'} for e in json.loads(b)['detections']]
    check(got == want, 'tiled detections differ from `ravlt detect --tile`:\n%r\n%r' % (got[:3], want[:3]))
    plain = [{k: v for k, v in e.items() if k != 'image_id'} for e in d['det_entries'][p]]
    check(got != plain, 'tile=96x128 gave the untiled detections: the tiling query was not applied')
    s, _, b = S.predict('demo-det', read(p), '?tile=96x128&tile_merge=nmm&tile_full=1&max_dets=2')
    best = sorted(want, key=lambda e: -e['score'])[:2]  # the best two by score, in the file's (class) order
    got2 = [{k: v for k, v in e.items() if k != 'name'} for e in json.loads(b)['detections']] if s == 200 else None
    check(len(want) > 2 and got2 == [e for e in want if e in best], 'max_dets=2: %r' % got2)
    q = d['seg'][0]
    run('-q', '--threads', '2', 'segment', '--tile', '100x120', '--tile-overlap', '0.3', '--format', 'png', '--out-dir', tiled, q)
    s, _, b = S.predict('demo', read(q), '?format=png&tile=100x120&tile_overlap=0.3')
    check(s == 200 and b == read(os.path.join(tiled, stem(q) + '.png')), 'tiled label PNG differs from `ravlt segment --tile`')
    for model, query, what in (('demo', '?tile_overlap=0.2', 'need tile'), ('demo', '?tile=64&tile_merge=nmm', 'for detectors'),
                               ('demo-det', '?tile=0x5', 'tile must be'), ('demo-det', '?tile=64&tile_overlap=1', 'tile_overlap'),
                               ('demo-det', '?tile=64&tile_merge=wbf', 'tile_merge'), ('demo-det', '?tile=64&max_dets=0', 'max_dets')):
        s, h, b = S.predict(model, read(p), query)
        error_of(s, h, b, 400, 'tiling query %s' % query)
        check(what in json.loads(b)['error'], '%s: %r does not say %r' % (query, b, what))


def check_v2(S, d):
    check(S.req('GET', '/v2/health/live')[0] == 200, 'live')
    check(S.req('GET', '/v2/health/ready')[0] == 200, 'ready')
    check(S.get_json('/v2')['name'] == 'ravlt', 'server metadata')
    m = S.get_json('/v2/models/demo-det')
    check(m['name'] == 'demo-det' and m['platform'] == 'ravlt', 'metadata %r' % m)
    check(m['inputs'] == [{'name': 'image', 'datatype': 'BYTES', 'shape': [1]}], 'inputs %r' % m['inputs'])
    check([(o['name'], o['datatype'], o['shape']) for o in m['outputs']] ==
          [('boxes', 'FP32', [-1, 4]), ('scores', 'FP32', [-1]), ('labels', 'INT32', [-1])], 'outputs %r' % m['outputs'])
    m = S.get_json('/v2/models/demo')
    check([(o['name'], o['datatype'], o['shape']) for o in m['outputs']] == [('label_map', 'INT32', [-1, -1])], 'seg outputs %r' % m)
    check(S.get_json('/v2/models/demo/ready') == {'name': 'demo', 'ready': True}, 'model ready')
    check(S.get_json('/v2/models/demo/versions/1/ready')['ready'], 'versioned route')
    error_of(*S.req('GET', '/v2/models/nope/ready'), 404, 'unknown model ready')

    def infer(model, data, extra=None):
        body = {'id': 'r-1', 'inputs': [{'name': 'image', 'datatype': 'BYTES', 'shape': [1], 'data': [base64.b64encode(data).decode()]}]}
        body.update(extra or {})
        return S.req('POST', '/v2/models/%s/infer' % model, json.dumps(body).encode(), {'Content-Type': 'application/json'})
    for p in d['det']:
        s, _, b = infer('demo-det', read(p))
        check(s == 200, 'infer: %d %r' % (s, b[:300]))
        j = json.loads(b)
        check(j['model_name'] == 'demo-det' and j['id'] == 'r-1', 'infer header %r' % {k: j[k] for k in j if k != 'outputs'})
        o = {x['name']: x for x in j['outputs']}
        want = d['det_entries'][p]
        n = len(want)
        check(o['boxes']['shape'] == [n, 4] and o['scores']['shape'] == [n] and o['labels']['shape'] == [n], 'shapes')
        check(o['boxes']['datatype'] == 'FP32' and o['labels']['datatype'] == 'INT32', 'datatypes')
        boxes = np.array(o['boxes']['data'], dtype=np.float32).reshape(n, 4)
        wb = np.array([[e['bbox'][0], e['bbox'][1], e['bbox'][0] + e['bbox'][2], e['bbox'][1] + e['bbox'][3]] for e in want],
                      dtype=np.float32).reshape(n, 4)
        check(np.array_equal(boxes, wb), '%s: v2 boxes differ from the CLI (float32): %r %r' % (p, boxes[:2], wb[:2]))
        check(np.array_equal(np.array(o['scores']['data'], np.float32), np.array([e['score'] for e in want], np.float32)), 'scores')
        check(o['labels']['data'] == [e['category_id'] for e in want], 'labels')
        s, _, b = infer('demo-det', read(p), {'parameters': {'score_thr': 0.3}, 'outputs': [{'name': 'scores'}]})
        o = json.loads(b)['outputs']
        check([x['name'] for x in o] == ['scores'] and o[0]['data'] == [x for x in o[0]['data'] if x >= 0.3] and
              len(o[0]['data']) == sum(e['score'] >= 0.3 for e in want), 'score_thr / outputs selection %r' % o)
    import ravlt
    for p in d['seg'][:1]:
        j = json.loads(infer('demo', read(p))[2])
        o = j['outputs'][0]
        lab = ravlt.imread(os.path.join(WORK, 'segout', stem(p) + '.png'), gray=True).astype(np.int64) - 1
        check(o['name'] == 'label_map' and o['datatype'] == 'INT32' and o['shape'] == list(lab.shape), 'label_map %r' % o['shape'])
        check(np.array_equal(np.array(o['data']).reshape(lab.shape), lab), 'label_map differs from the label PNG')
        out = ravlt.Client('http://127.0.0.1:%d' % S.port).infer(p, model='demo')
        check(np.array_equal(out['label_map'], lab), 'Client.infer')
    for body, what in ((b'{', 'not JSON'), (b'[]', 'not an object'), (json.dumps({'inputs': []}).encode(), 'no inputs'),
                       (json.dumps({'inputs': [{'name': 'image', 'datatype': 'FP32', 'shape': [1], 'data': [1.0]}]}).encode(), 'FP32'),
                       (json.dumps({'inputs': [{'name': 'image', 'datatype': 'BYTES', 'shape': [1], 'data': ['@@@']}]}).encode(), 'bad base64'),
                       (json.dumps({'inputs': [{'name': 'image', 'datatype': 'BYTES', 'shape': [1],
                                                'data': [base64.b64encode(b'hello').decode()]}]}).encode(), 'not an image')):
        error_of(*S.req('POST', '/v2/models/demo/infer', body, {'Content-Type': 'application/json'}), 400, 'infer: ' + what)
    error_of(*infer('demo-det', read(d['det'][0]), {'outputs': [{'name': 'label_map'}]}), 400, 'infer: unknown output')


def check_errors(S, d):
    img = read(d['det'][0])
    error_of(*S.predict('nope', img), 404, 'unknown model')
    error_of(*S.req('GET', '/nope'), 404, 'unknown route')
    error_of(*S.req('GET', '/v2/models/nope'), 404, 'unknown model metadata')
    s, h, b = S.req('GET', '/v1/models/demo/predict')
    error_of(s, h, b, 405, 'GET predict')
    check(h.get('allow') == 'POST', 'Allow: %r' % h.get('allow'))
    s, h, b = S.req('POST', '/metrics', b'x')
    error_of(s, h, b, 405, 'POST /metrics')
    error_of(*S.req('DELETE', '/v2/health/live'), 405, 'DELETE live')
    error_of(*S.predict('demo', b'hello, not an image'), 400, 'not an image')
    error_of(*S.predict('demo', b'\x89PNG\r\n\x1a\n' + b'\0' * 40, ctype='image/png'), 400, 'corrupt PNG header')
    error_of(*S.predict('demo', b'\xff\xd8\xff\xe0' + os.urandom(64)), 400, 'corrupt JPEG')
    error_of(*S.predict('demo', b''), 400, 'empty body')
    e = error_of(*S.predict('demo', png_header(20000, 20000) + b'\0' * 100, ctype='image/png'), 413, 'over --max-pixels')
    check('max-pixels' in e, '413 message: %s' % e)
    e = error_of(*S.predict('demo', img, ctype='text/plain'), 415, 'text/plain')
    error_of(*S.predict('demo', img, ctype='image/gif'), 415, 'image/gif')
    error_of(*S.predict('demo', img, ctype='application/x-www-form-urlencoded'), 415, 'form-urlencoded')
    error_of(*S.predict('demo', img, '?format=svg'), 400, 'format=svg')
    error_of(*S.predict('demo-det', img, '?format=png'), 400, 'format=png on a detector')
    for t in ('2', '-0.1', 'abc', ''):
        error_of(*S.predict('demo-det', img, '?score_thr=' + t), 400, 'score_thr=' + t)
    # keep-alive: several answers on one connection
    c = S.conn()
    socks = set()
    for i in range(3):
        c.request('POST', '/v1/models/demo-det/predict', body=img, headers={'Content-Type': 'image/jpeg'})
        r = c.getresponse()
        r.read()
        check(r.status == 200, 'keep-alive request %d: %d' % (i, r.status))
        socks.add(id(c.sock))
    c.request('GET', '/v2/health/live')
    r = c.getresponse()
    r.read()
    check(len(socks) == 1 and c.sock is not None, 'keep-alive: the connection was not kept')
    c.close()


def check_max_body(d):
    S = Server('--max-body', '100000')
    try:
        img = read(d['big'])
        check(len(img) > 100000, 'the big image is small')
        # Content-Length over the limit: 413 before the body is sent, then the connection closes
        s = socket.create_connection(('127.0.0.1', S.port), timeout=30)
        s.sendall(b'POST /v1/models/demo/predict HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n' % len(img))
        s.sendall(img[:1000])
        data = b''
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            k = s.recv(65536)
            if not k:
                break
            data += k
        s.close()
        check(data.startswith(b'HTTP/1.1 413'), '413 before the body: %r' % data[:200])
        head, _, body = data.partition(b'\r\n\r\n')
        check(b'connection: close' in head.lower(), '413: no Connection: close')
        check(set(json.loads(body)) == {'error'}, '413 body %r' % body)
        # chunked: over the limit while reading
        c = S.conn()
        c.putrequest('POST', '/v1/models/demo/predict')
        c.putheader('Content-Type', 'image/jpeg')
        c.putheader('Transfer-Encoding', 'chunked')
        c.endheaders()
        for i in range(0, len(img), 50000):
            part = img[i:i + 50000]
            c.send(b'%x\r\n' % len(part) + part + b'\r\n')
        c.send(b'0\r\n\r\n')
        r = c.getresponse()
        error_of(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read(), 413, 'chunked over --max-body')
        c.close()
        s, h, b = S.predict('demo', read(d['seg'][0]))
        check(s == 200, 'a body under the limit: %d' % s)
    finally:
        check(S.stop() == 0, 'exit status')


def check_auth(d):
    tok = os.path.join(WORK, 'token.txt')
    open(tok, 'w').write('s3cret-t0ken \n\n')
    S = Server('--weights', 'demo', '--token-file', tok, '--max-pixels', '10000')
    try:
        good, bad = {'Authorization': 'Bearer s3cret-t0ken'}, {'Authorization': 'Bearer s3cret-t0ke'}
        for path in ('/', '/metrics', '/v1/models', '/v2/models/demo', '/v2/models/demo/ready', '/streams'):
            s, h, b = S.req('GET', path)
            error_of(s, h, b, 401, 'GET %s without a token' % path)
            check(h.get('www-authenticate', '').startswith('Bearer'), 'WWW-Authenticate')
            error_of(*S.req('GET', path, headers=bad), 401, 'GET %s with a wrong token' % path)
            check(S.req('GET', path, headers=good)[0] == 200, 'GET %s with the token' % path)
        error_of(*S.predict('demo', read(d['seg'][0])), 401, 'predict without a token')
        error_of(*S.req('POST', '/v2/models/demo/infer', b'{}'), 401, 'infer without a token')
        error_of(*S.predict('demo', read(d['seg'][0]), headers={'Authorization': 'Basic czNjcmV0LXQwa2Vu'}), 401, 'Basic auth')
        for path in ('/v2/health/live', '/v2/health/ready'):
            check(S.req('GET', path)[0] == 200, '%s needs no token' % path)
        e = error_of(*S.predict('demo', read(d['seg'][0]), headers=good), 413, 'over --max-pixels 10000 (decoded size)')
        check('10000' in e, e)
    finally:
        check(S.stop() == 0, 'exit status')


def check_overload(d):
    img = read(d['big'])
    S = Server('--weights', 'demo', '--workers', '1', '--queue', '1')
    try:
        res = concurrently(12, lambda i: S.predict('demo', img))
        codes = [r[0] if isinstance(r, tuple) else repr(r) for r in res]
        check(all(c in (200, 503) for c in codes), 'codes under overload: %r' % codes)
        check(codes.count(200) >= 1 and codes.count(503) >= 1, 'no 503 with --queue 1 under 12 concurrent requests: %r' % codes)
        for r in res:
            if r[0] == 503:
                error_of(*r, 503, 'overload')
                check(r[1].get('retry-after') == '1', '503 without Retry-After')
        for i in range(3):
            check(S.predict('demo', read(d['seg'][0]))[0] == 200, 'the server answers after the overload')
        m = S.req('GET', '/metrics')[2].decode()
        check(re.search(r'ravlt_requests_total\{model="demo",code="503"\} [1-9]', m), 'metrics: 503 not counted')
    finally:
        check(S.stop() == 0, 'exit status')
    # --timeout: a request waiting behind a running one longer than 0.02 s gets 504 (room in
    # the queue: no 503); tried up to 3 times, in case the requests never overlapped
    S = Server('--weights', 'demo', '--workers', '1', '--queue', '16', '--timeout', '0.02')
    try:
        for attempt in range(3):
            res = concurrently(6, lambda i: S.predict('demo', img))
            codes = [r[0] if isinstance(r, tuple) else repr(r) for r in res]
            check(all(c in (200, 504) for c in codes) and 200 in codes, 'codes with --timeout 0.02: %r' % codes)
            if 504 in codes:
                break
        check(504 in codes, 'no 504 with --timeout 0.02 in 3 rounds of 6 concurrent requests')
        for r in res:
            if r[0] == 504:
                error_of(*r, 504, 'timeout')
        check(S.predict('demo', read(d['seg'][0]))[0] == 200, 'the server answers after the timeouts')
        m = S.req('GET', '/metrics')[2].decode()
        check(re.search(r'ravlt_requests_total\{model="demo",code="504"\} [1-9]', m), 'metrics: 504 not counted')
    finally:
        check(S.stop() == 0, 'exit status')


def check_workers(d):
    """Two workers sharing the models' weights, each with its own state: concurrent requests
    answer what the CLI writes."""
    # (the detector's last bits depend on the thread count: the CLI with 1 thread too)
    run('-q', '--threads', '1', 'detect', '--json', os.path.join(WORK, 'det1.json'), '--no-draw', *d['det'])
    entries = json.load(open(os.path.join(WORK, 'det1.json')))
    ref = {p: [e for e in entries if e['image_id'] == i + 1] for i, p in enumerate(d['det'])}
    S = Server('--weights', 'demo', '--weights', 'demo-det', '--workers', '2', '--threads', '1', '--queue', '64')
    try:
        jobs = [(p, 'det') for p in d['det']] * 3 + [(p, 'seg') for p in d['seg']] * 3

        def one(i):
            p, kind = jobs[i]
            if kind == 'det':
                s, _, b = S.predict('demo-det', read(p))
                want = [{k: v for k, v in e.items() if k != 'image_id'} for e in ref[p]]
                return s == 200 and [{k: v for k, v in e.items() if k != 'name'} for e in json.loads(b)['detections']] == want
            s, _, b = S.predict('demo', read(p), '?format=png')
            return s == 200 and b == read(os.path.join(WORK, 'segout', stem(p) + '.png'))
        res = concurrently(len(jobs), one)
        check(all(r is True for r in res), 'two workers: answers differ from the CLI: %r' % res)
    finally:
        check(S.stop() == 0, 'exit status')


def check_metrics(S):
    S.predict('demo-det', read(DATA_IMG))
    S.predict('demo', b'not an image')
    s, h, b = S.req('GET', '/metrics')
    check(s == 200 and h['content-type'].startswith('text/plain'), 'metrics %d %s' % (s, h.get('content-type')))
    m = b.decode()
    for pat in (r'ravlt_requests_total\{model="demo-det",code="200"\} \d+', r'ravlt_requests_total\{model="demo",code="400"\} \d+',
                r'# TYPE ravlt_request_duration_seconds histogram', r'ravlt_request_duration_seconds_bucket\{le="\+Inf"\} \d+',
                r'ravlt_inference_duration_seconds_count \d+', r'ravlt_queue_depth 0', r'process_resident_memory_bytes \d{6,}'):
        check(re.search(pat, m), 'metrics: no %s in\n%s' % (pat, m))
    n200 = int(re.search(r'ravlt_requests_total\{model="demo-det",code="200"\} (\d+)', m).group(1))
    S.predict('demo-det', read(DATA_IMG))
    m2 = S.req('GET', '/metrics')[2].decode()
    check(int(re.search(r'ravlt_requests_total\{model="demo-det",code="200"\} (\d+)', m2).group(1)) == n200 + 1, 'count +1')


def check_sigterm(d):
    S = Server('--weights', 'demo', '--workers', '1', '--queue', '16')
    img = read(d['big'])
    started = threading.Event()

    def one(i):
        started.set()
        return S.predict('demo', img)
    out = []
    th = threading.Thread(target=lambda: out.extend(concurrently(6, one)))
    th.start()
    started.wait(30)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:  # every request received: queued, being worked on or answered
        m = S.req('GET', '/metrics')[2].decode()
        got = sum(int(re.search(r'%s (\d+)' % k, m).group(1))
                  for k in ('ravlt_queue_depth', 'ravlt_requests_in_progress'))
        done = re.search(r'ravlt_requests_total\{model="demo",code="200"\} (\d+)', m)
        if got + (int(done.group(1)) if done else 0) >= 6:
            break
        time.sleep(0.005)
    rc = S.stop(signal.SIGTERM)
    th.join(120)
    codes = [r[0] if isinstance(r, tuple) else repr(r) for r in out]
    check(codes == [200] * 6, 'SIGTERM with requests in flight: %r\n%s' % (codes, S.text()))
    check(rc == 0, 'SIGTERM: exit %d, not 0\n%s' % (rc, S.text()))
    try:
        socket.create_connection(('127.0.0.1', S.port), timeout=5).close()
        check(False, 'still accepting connections after SIGTERM')
    except OSError:
        pass
    # the grace period running out: exit 128 + the signal
    # (the queued ones answered 503, the one in work cancelled and answered 503 too)
    S = Server('--weights', 'demo', '--workers', '1', '--grace', '0')
    out = []
    th = threading.Thread(target=lambda: out.extend(concurrently(6, lambda i: S.predict('demo', img))))
    th.start()
    time.sleep(0.15)
    t0 = time.monotonic()
    rc = S.stop(signal.SIGINT)
    check(time.monotonic() - t0 < 10, 'SIGINT with --grace 0 took %.1f s' % (time.monotonic() - t0))
    th.join(120)
    check(rc in (0, 130), 'SIGINT with --grace 0: exit %d' % rc)
    for r in out:  # answered 200 or 503, or the connection was refused / closed after the signal
        if isinstance(r, tuple):
            check(r[0] in (200, 503), 'an answer of %d after SIGINT' % r[0])
            if r[0] == 503:
                error_of(*r, 503, 'after SIGINT')
        else:
            check(isinstance(r, (ConnectionError, http.client.HTTPException)), 'after SIGINT: %r' % r)


def check_streams(d):
    vt = os.path.join(SAMPLES, 'vtest.avi')
    short = os.path.join(WORK, 'short.avi')
    run('-q', 'video', '--weights', 'demo', vt, '--max-frames', '5', '--output', short)
    run('-q', '--threads', '1', 'video', '--weights', 'demo-det', vt, '--max-frames', '100', '--json', os.path.join(WORK, 'vt.jsonl'))
    cli = {json.loads(l)['frame']: l.rstrip('\n') for l in open(os.path.join(WORK, 'vt.jsonl'))}
    S = Server('--weights', 'det=demo-det', '--weights', 'demo', '--stream', 'v=' + vt, '--stream', 'short:demo=' + short,
               '--threads', '1')
    try:
        st = S.get_json('/streams')['streams']
        check([x['name'] for x in st] == ['v', 'short'] and st[0]['model'] == 'det' and st[1]['model'] == 'demo', '%r' % st)
        # MJPEG: parts of the multipart/x-mixed-replace answer are JPEG images
        slow = socket.create_connection(('127.0.0.1', S.port), timeout=30)  # a viewer that reads nothing
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.sendall(b'GET /streams/v.mjpg HTTP/1.1\r\nHost: x\r\n\r\n')
        c = S.conn(30)
        c.request('GET', '/streams/v.mjpg')
        r = c.getresponse()
        check(r.status == 200 and r.getheader('Content-Type') == 'multipart/x-mixed-replace; boundary=ravltframe',
              'mjpeg: %d %s' % (r.status, r.getheader('Content-Type')))
        buf, t0 = b'', time.monotonic()
        while buf.count(b'--ravltframe\r\n') < 8 and time.monotonic() - t0 < 60:
            k = r.read1(65536)
            check(k, 'the MJPEG answer ended')
            buf += k
        parts = buf.split(b'--ravltframe\r\n')[1:-1]
        check(len(parts) >= 6, 'fewer than 6 MJPEG parts in 60 s (a slow viewer holds the stream?)')
        for p in parts:
            h, _, body = p.partition(b'\r\n\r\n')
            n = int(re.search(rb'Content-Length: (\d+)', h).group(1))
            check(b'Content-Type: image/jpeg' in h and len(body) == n + 2 and body[:2] == b'\xff\xd8' and body[n - 2:] == b'\xff\xd9\r\n',
                  'not a JPEG part: %r' % h)
        c.close()
        # SSE: the lines `ravlt video --json` writes, for the same frames
        c = S.conn(30)
        c.request('GET', '/streams/v/events')
        r = c.getresponse()
        check(r.status == 200 and r.getheader('Content-Type') == 'text/event-stream', 'events content type')
        buf, t0 = b'', time.monotonic()
        while buf.count(b'\n\n') < 4 and time.monotonic() - t0 < 60:
            k = r.read1(65536)
            check(k, 'the events answer ended')
            buf += k
        c.close()
        lines = re.findall(rb'^data: (.*)$', buf, re.M)
        check(len(lines) >= 3, 'fewer than 3 events: %r' % buf[:300])
        for l in lines:
            j = json.loads(l)
            check(set(j) == {'frame', 'time', 'detections'}, 'event keys %r' % j)
            if j['frame'] in cli:
                check(l.decode() == cli[j['frame']], 'event of frame %d differs from `ravlt video --json`:\n%s\n%s' % (j['frame'], l, cli[j['frame']]))
        check(any(json.loads(l)['frame'] in cli for l in lines), 'no event of the first 100 frames to compare')
        # a file that ended (no --loop): 410 on both routes
        t0 = time.monotonic()
        while S.get_json('/streams')['streams'][1]['state'] != 'ended' and time.monotonic() - t0 < 30:
            time.sleep(0.1)
        error_of(*S.req('GET', '/streams/short.mjpg'), 410, 'an ended stream')
        error_of(*S.req('GET', '/streams/short/events'), 410, 'an ended stream\'s events')
        error_of(*S.req('GET', '/streams/nope.mjpg'), 404, 'unknown stream')
        m = S.req('GET', '/metrics')[2].decode()
        check(re.search(r'ravlt_stream_frames_total\{stream="v"\} [1-9]', m) and re.search(r'ravlt_stream_frames_total\{stream="short"\} 5\b', m),
              'stream frames in metrics:\n' + m)
        # SIGTERM: the viewers' answers end, exit 0
        c = socket.create_connection(('127.0.0.1', S.port), timeout=30)
        c.sendall(b'GET /streams/v/events HTTP/1.1\r\nHost: x\r\n\r\n')
        c.recv(4096)
        rc = S.stop()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            if not c.recv(65536):
                break
        c.close()
        slow.close()
        check(rc == 0, 'exit %d after SIGTERM with viewers\n%s' % (rc, S.text()))
    finally:
        if S.p.poll() is None:
            S.stop()
    S = Server('--weights', 'demo', '--stream', 's=' + short, '--loop', '--every', '2')
    try:
        t0 = time.monotonic()
        while S.get_json('/streams')['streams'][0]['loops'] < 2 and time.monotonic() - t0 < 30:
            time.sleep(0.1)
        x = S.get_json('/streams')['streams'][0]
        check(x['loops'] >= 2 and x['state'] == 'running', '--loop: %r' % x)
        check(x['processed'] <= 3, '--every 2 on 5 frames: %r processed' % x['processed'])
    finally:
        check(S.stop() == 0, 'exit status')


def check_slowloris(d):
    S = Server('--weights', 'demo', '--idle-timeout', '1', '--max-connections', '8', '--max-connections-per-ip', '4')
    try:
        # a client that stalls in its headers holds at most 4 connections (its address's
        # share), none of them a worker, each for at most --idle-timeout
        stalled = []
        for i in range(4):
            s = socket.create_connection(('127.0.0.1', S.port), timeout=10)
            s.sendall(b'POST /v1/models/demo/predict HTTP/1.1\r\nHost: x\r\nContent-Le')  # and nothing more
            stalled.append(s)
        time.sleep(0.2)
        extra = socket.create_connection(('127.0.0.1', S.port), timeout=10)
        extra.sendall(b'GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n')
        try:
            got = extra.recv(100)
        except ConnectionResetError:
            got = b''
        check(got == b'', 'a 5th connection from the same address was served: %r' % got)
        extra.close()
        # another address (127.0.0.2 is loopback too) is served meanwhile
        other = socket.socket()
        other.bind(('127.0.0.2', 0))
        other.settimeout(10)
        other.connect(('127.0.0.1', S.port))
        other.sendall(b'GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
        check(other.recv(100).startswith(b'HTTP/1.1 200'), 'another address is not served while one stalls')
        other.close()
        t0 = time.monotonic()
        for s in stalled:
            try:
                check(s.recv(100) == b'', 'a stalled connection got data')
            except ConnectionResetError:
                pass
            s.close()
        check(time.monotonic() - t0 < 8, 'stalled connections held for %.1f s with --idle-timeout 1' % (time.monotonic() - t0))
        # (the address's connection count drops when the server's connection threads are done,
        # a moment after the sockets closed: a few tries, 5 s at most)
        t0, ok = time.monotonic(), False
        while not ok and time.monotonic() - t0 < 5:
            try:
                ok = S.predict('demo', read(d['seg'][0]))[0] == 200
            except ConnectionError:
                time.sleep(0.1)
        check(ok, 'no answer within 5 s after the stalled connections closed')
    finally:
        check(S.stop() == 0, 'exit status')


def check_startup(d):
    S = Server('--weights', 'demo')
    try:
        for args, want in ((['--port', str(S.port)], 'cannot listen'),
                           (['--weights', os.path.join(WORK, 'missing.pth')], 'missing.pth'),
                           (['--weights', os.path.join(WORK, 'det.json')], 'det.json'),
                           (['--stream', 'x=' + os.path.join(WORK, 'missing.avi')], 'missing.avi')):
            cmd = [BIN, 'serve'] + (args if args[0] == '--weights' else ['--weights', 'demo'] + args)
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            lines = r.stderr.strip().splitlines()
            check(r.returncode == 1 and len(lines) == 1 and want in lines[0] and 'listening' not in r.stderr,
                  'start-up failure %r: exit %d, %r' % (args, r.returncode, r.stderr))
        for args in (['--weights', 'a b=demo'], ['--weights', 'x=demo', '--weights', 'x=demo-det'], ['--stream', 'v:nope=0'],
                     ['--tls-cert', 'x.pem'], ['extra']):
            r = subprocess.run([BIN, 'serve'] + args, capture_output=True, text=True, timeout=60)
            check(r.returncode == 2 and 'listening' not in r.stderr, 'usage error %r: exit %d %r' % (args, r.returncode, r.stderr))
    finally:
        check(S.stop() == 0, 'exit status')
    S = Server('--weights', 'demo', '--host', '0.0.0.0')
    check('warning' in S.text() and 'token' in S.text(), 'no warning for 0.0.0.0 without a token:\n' + S.text())
    check(S.stop() == 0, 'exit status')
    # TLS
    S = Server('--weights', 'demo', '--tls-cert', os.path.join(DATA, 'tls_cert.pem'), '--tls-key', os.path.join(DATA, 'tls_key.pem'))
    try:
        check('https://' in S.text(), 'https not announced')
        ctx = ssl.create_default_context(cafile=os.path.join(DATA, 'tls_cert.pem'))
        c = http.client.HTTPSConnection('127.0.0.1', S.port, timeout=30, context=ctx)
        c.request('POST', '/v1/models/demo/predict', body=read(d['seg'][0]), headers={'Content-Type': 'image/jpeg'})
        r = c.getresponse()
        check(r.status == 200 and json.loads(r.read())['model'] == 'demo', 'predict over TLS: %d' % r.status)
        c.close()
    finally:
        check(S.stop() == 0, 'exit status')


def main():
    os.makedirs(WORK, exist_ok=True)
    d = prepare()
    global DATA_IMG
    DATA_IMG = d['det'][0]
    t = time.monotonic()
    checks = []
    S = Server('--weights', 'demo', '--weights', 'demo-det', '--threads', '2')
    try:
        checks += [('predict', lambda: check_predict_equals_cli(S, d)), ('tiles', lambda: check_tiles(S, d)), ('v2', lambda: check_v2(S, d)),
                   ('errors', lambda: check_errors(S, d)), ('metrics', lambda: check_metrics(S))]
        for name, fn in checks:
            if not ONLY or name in ONLY:
                t0 = time.monotonic()
                fn()
                print('ok %-10s %.1f s' % (name, time.monotonic() - t0), flush=True)
        page = S.req('GET', '/')
        check(page[0] == 200 and b'<option value="demo-det"' in page[2], 'GET / does not name the models')
    finally:
        rc = S.stop()
    check(rc == 0, 'main server: exit %d\n%s' % (rc, S.text()))
    for name, fn in (('workers', check_workers), ('max-body', check_max_body), ('auth', check_auth), ('overload', check_overload), ('sigterm', check_sigterm),
                     ('streams', check_streams), ('slowloris', check_slowloris), ('startup', check_startup)):
        if not ONLY or name in ONLY:
            t0 = time.monotonic()
            fn(d)
            print('ok %-10s %.1f s' % (name, time.monotonic() - t0), flush=True)
    print('serve_check: all checks passed in %.1f s' % (time.monotonic() - t))


if __name__ == '__main__':
    main()
