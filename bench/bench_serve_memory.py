"""`ravlt serve`'s resident memory under a mixed load (a benchmark, not a test: minutes).

    /usr/bin/python3 bench/bench_serve_memory.py [BUILD_DIR=build] [--requests N] [--clients C]
                                                [--workers W] [--queue Q]

One server with both demo models, a token, a looping live stream (OpenCV's vtest.avi) and a
short queue (so that part of the load is answered 503), hit by C client threads, each on its
own keep-alive connection, sending in turn: predictions (json, png, overlay; raw body and
multipart), KServe v2 infer, /metrics and the v2 metadata, and the error cases (400 not an
image, 400 truncated, 401 no token, 404 unknown model, 413 over --max-pixels from the header,
415 content type); besides them, viewers that open the MJPEG and the events routes, read a
few frames and go away. The server's VmRSS is read after a warm-up of C * 25 requests and
then after every N / 4 requests; the table goes to stdout. Memory must not grow with the
load: the last row within 10% of the warm-up row.
"""
import base64
import http.client
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

args = sys.argv[1:]
build = 'build'
if args and not args[0].startswith('--'):
    build = args.pop(0)
opt = {'--requests': 4000, '--clients': 8, '--workers': 2, '--queue': 2}
while args:
    k = args.pop(0)
    if k not in opt or not args:
        sys.exit('usage: bench_serve_memory.py [BUILD_DIR] [--requests N] [--clients C] [--workers W] [--queue Q]')
    opt[k] = int(args.pop(0))
N, C = opt['--requests'], opt['--clients']
BIN = os.path.abspath(os.path.join(build, 'ravlt'))
VT = '/usr/share/doc/opencv-doc/examples/data/vtest.avi'
for k in ('http_proxy', 'HTTP_PROXY'):
    os.environ.pop(k, None)
os.environ['no_proxy'] = '*'
tmp = tempfile.mkdtemp(prefix='ravlt-soak-')
subprocess.run([BIN, 'synth', '--task', 'seg', '--out-dir', tmp + '/seg', '--count', '1', '-q'], check=True)
subprocess.run([BIN, 'synth', '--task', 'det', '--out-dir', tmp + '/det', '--count', '1', '-q'], check=True)
segdir, detdir = tmp + '/seg/images/validation', tmp + '/det/images'
SEG = open(os.path.join(segdir, os.listdir(segdir)[0]), 'rb').read()
DET = open(os.path.join(detdir, os.listdir(detdir)[0]), 'rb').read()
TOKEN = 's3cret-soak'
with open(tmp + '/token', 'w') as f:
    f.write(TOKEN + '\n')
ihdr = struct.pack('>IIBBBBB', 60000, 60000, 8, 2, 0, 0, 0)
HUGE = b'\x89PNG\r\n\x1a\n' + struct.pack('>I', 13) + b'IHDR' + ihdr + struct.pack('>I', zlib.crc32(b'IHDR' + ihdr))
AUTH = {'Authorization': 'Bearer ' + TOKEN}

cmd = [BIN, 'serve', '--port', '0', '--weights', 'demo', '--weights', 'demo-det', '--token-file', tmp + '/token',
       '--workers', str(opt['--workers']), '--queue', str(opt['--queue']), '--threads', '1']
if os.path.exists(VT):
    cmd += ['--stream', 'v:demo-det=' + VT, '--loop']
log = open(tmp + '/serve.log', 'w+')
srv = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
port = None
for _ in range(600):
    text = open(tmp + '/serve.log').read()
    if 'listening on' in text:
        port = int(text.split('listening on http://')[1].split('/')[0].rsplit(':', 1)[1])
        break
    if srv.poll() is not None:
        sys.exit('ravlt serve exited %d:\n%s' % (srv.returncode, text))
    time.sleep(0.1)
if port is None:
    srv.kill()
    sys.exit('ravlt serve: not listening after 60 s')


def rss_kb():
    with open('/proc/%d/status' % srv.pid) as f:
        return int([l for l in f if l.startswith('VmRSS')][0].split()[1])


def multipart(data):
    b = '----ravltsoak'
    body = ('--%s\r\nContent-Disposition: form-data; name="file"; filename="x.jpg"\r\nContent-Type: image/jpeg\r\n\r\n'
            % b).encode() + data + ('\r\n--%s--\r\n' % b).encode()
    return body, 'multipart/form-data; boundary=' + b


MP_BODY, MP_TYPE = multipart(DET)
V2 = json.dumps({'inputs': [{'name': 'image', 'datatype': 'BYTES', 'shape': [1], 'data': [base64.b64encode(SEG).decode()]}]})
# (method, path, body, headers, the statuses it may get: a full queue is answered 503 from the
# headers, before the body is read, so what the body shows (400 not an image, 413 over
# --max-pixels) can be 503 first)
MIX = [
    ('POST', '/v1/models/demo/predict', SEG, {'Content-Type': 'image/jpeg'}, (200, 503)),
    ('POST', '/v1/models/demo-det/predict', DET, {'Content-Type': 'image/jpeg'}, (200, 503)),
    ('POST', '/v1/models/demo/predict?format=png', SEG, {}, (200, 503)),
    ('POST', '/v1/models/demo-det/predict?format=overlay&score_thr=0.2', DET, {'Content-Type': 'application/octet-stream'}, (200, 503)),
    ('POST', '/v1/models/demo-det/predict', MP_BODY, {'Content-Type': MP_TYPE}, (200, 503)),
    ('POST', '/v2/models/demo/infer', V2.encode(), {'Content-Type': 'application/json'}, (200, 503)),
    ('GET', '/metrics', None, {}, (200,)),
    ('GET', '/v2/models/demo-det', None, {}, (200,)),
    ('POST', '/v1/models/demo/predict', b'not an image at all', {'Content-Type': 'image/jpeg'}, (400, 503)),
    ('POST', '/v1/models/demo/predict', SEG[:200], {'Content-Type': 'image/jpeg'}, (400, 503)),
    ('POST', '/v1/models/nope/predict', SEG, {'Content-Type': 'image/jpeg'}, (404,)),
    ('POST', '/v1/models/demo/predict', HUGE, {'Content-Type': 'image/png'}, (413, 503)),
    ('POST', '/v1/models/demo/predict', SEG, {'Content-Type': 'text/plain'}, (415,)),
    ('POST', '/v1/models/demo/predict', SEG, {'Content-Type': 'image/jpeg', 'Authorization': 'Bearer wrong'}, (401,)),
]
lock = threading.Lock()
sent = [0]
codes = {}
unexpected = []


def client(i, n):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
    for j in range(n):
        m, path, body, hd, ok = MIX[(i * 7 + j) % len(MIX)]
        h = dict(AUTH)
        h.update(hd)
        try:
            c.request(m, path, body=body, headers=h)
            r = c.getresponse()
            r.read()
            st = r.status
            if r.getheader('Connection', '').lower() == 'close':
                c.close()
        except (OSError, http.client.HTTPException) as e:
            st = type(e).__name__
            c.close()
            c = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
        with lock:
            sent[0] += 1
            codes[st] = codes.get(st, 0) + 1
            if st not in ok:
                unexpected.append((m, path, hd.get('Content-Type'), st))
    c.close()


def viewer(route, stop):
    while not stop.is_set():
        try:
            s = socket.create_connection(('127.0.0.1', port), timeout=30)
            s.sendall(('GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n' % (route, TOKEN)).encode())
            got = 0
            while got < 200000 and not stop.is_set():
                k = s.recv(65536)
                if not k:
                    break
                got += len(k)
            s.close()  # goes away mid-stream
        except OSError:
            time.sleep(0.1)
        with lock:
            codes['viewer'] = codes.get('viewer', 0) + 1


def load(total):
    ts = [threading.Thread(target=client, args=(i, total // C)) for i in range(C)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


stop = threading.Event()
viewers = []
if '--stream' in cmd:
    viewers = [threading.Thread(target=viewer, args=(r, stop)) for r in ('/streams/v.mjpg', '/streams/v/events')]
    for t in viewers:
        t.start()
rows = []
t0 = time.monotonic()
load(C * 25)
rows.append((sent[0], rss_kb(), time.monotonic() - t0))
step = N // 4
while sent[0] < N:
    load(step)
    rows.append((sent[0], rss_kb(), time.monotonic() - t0))
stop.set()
for t in viewers:
    t.join()
srv.terminate()
rc = srv.wait(120)
base = rows[0][1]
print('# %s, %d cores, load %s; ravlt serve --workers %d --queue %d --threads 1, demo + demo-det, %s; %d clients'
      % ([l for l in open('/proc/cpuinfo') if l.startswith('model name')][0].split(':')[1].strip(), os.cpu_count(),
         ' '.join(open('/proc/loadavg').read().split()[:3]), opt['--workers'], opt['--queue'],
         'a looping stream with MJPEG + events viewers coming and going' if viewers else 'no stream', C))
print()
print('| requests | VmRSS MB | vs warm-up | elapsed s |')
print('|---|---|---|---|')
for n, kb, t in rows:
    print('| %d | %.1f | %+.1f%% | %.0f |' % (n, kb / 1024, 100.0 * (kb - base) / base, t))
print()
print('answers: %s; unexpected: %d %r; server exit %d'
      % (', '.join('%s: %d' % (k, v) for k, v in sorted(codes.items(), key=str)), len(unexpected), unexpected[:5], rc))
subprocess.run(['rm', '-rf', tmp])
sys.exit(1 if unexpected or rc != 0 else 0)
