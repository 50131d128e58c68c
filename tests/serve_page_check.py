"""`ravlt serve`'s page (GET /) in headless Chromium, driven by Selenium and chromedriver
(tests/cli/test_serve_page.sh runs it): it renders with the served models in the HTML, an image
picked in the page shows its overlay and its table (a segmentation model, then a detector), a
live stream shows frames and figures; the console has no errors and no request goes anywhere
but the server.

    python3 tests/serve_page_check.py RAVLT_BIN WORK_DIR
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

BIN, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
VTEST = '/usr/share/doc/opencv-doc/examples/data/vtest.avi'
for k in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY'):
    os.environ.pop(k, None)
os.environ['no_proxy'] = os.environ['NO_PROXY'] = '*'


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def main():
    os.makedirs(WORK, exist_ok=True)
    for task, out in (('det', 'det'), ('seg', 'seg')):
        subprocess.run([BIN, 'synth', '--task', task, '--out-dir', os.path.join(WORK, out), '--count', '1', '-q'], check=True, timeout=120)
    det_img = os.path.join(WORK, 'det', 'images', os.listdir(os.path.join(WORK, 'det', 'images'))[0])
    sd = os.path.join(WORK, 'seg', 'images', 'validation')
    seg_img = os.path.join(sd, os.listdir(sd)[0])
    log = open(os.path.join(WORK, 'serve.log'), 'w+')
    srv = subprocess.Popen([BIN, 'serve', '--port', '0', '--weights', 'demo', '--weights', 'demo-det', '--stream',
                            'hall:demo-det=' + VTEST, '--loop'], stderr=log, stdout=subprocess.DEVNULL)
    port, t0 = None, time.monotonic()
    while port is None and time.monotonic() - t0 < 60:
        log.seek(0)
        m = re.search(r'listening on http://127\.0\.0\.1:(\d+)/', log.read())
        if m:
            port = int(m.group(1))
        check(srv.poll() is None, 'the server exited')
        time.sleep(0.05)
    check(port, 'the server did not start')
    origin = 'http://127.0.0.1:%d' % port
    opts = webdriver.ChromeOptions()
    opts.binary_location = '/usr/bin/chromium'
    for a in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
              '--no-first-run', '--proxy-server=127.0.0.1:9', '--user-data-dir=' + os.path.join(WORK, 'profile'),
              '--window-size=1280,1000'):
        opts.add_argument(a)
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL', 'performance': 'ALL'})
    driver = webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=opts)
    try:
        driver.set_page_load_timeout(60)
        driver.get(origin + '/')
        wait = WebDriverWait(driver, 60)
        check(driver.title == 'ravlt serve', 'title %r' % driver.title)
        names = [o.get_attribute('value') for o in driver.find_elements(By.CSS_SELECTOR, '#model option')]
        check(names == ['demo', 'demo-det'], 'models in the page: %r' % names)

        def upload(model, path, table_title):
            Select(driver.find_element(By.ID, 'model')).select_by_value(model)
            driver.execute_script("document.getElementById('result').replaceChildren()")
            driver.find_element(By.ID, 'file').send_keys(path)
            wait.until(lambda d: d.execute_script(
                "const i = document.getElementById('overlay'); return i && i.complete && i.naturalWidth > 0"))
            w, h = driver.execute_script("const i = document.getElementById('overlay'); return [i.naturalWidth, i.naturalHeight]")
            check((w, h) == (320, 240), 'overlay size %dx%d' % (w, h))
            wait.until(lambda d: d.find_element(By.ID, 'table-title').text.startswith(table_title))
            status = driver.find_element(By.ID, 'status')
            check('bad' not in (status.get_attribute('class') or ''), 'error shown: ' + status.text)
            return driver.find_elements(By.CSS_SELECTOR, '#table tbody tr')
        rows = upload('demo', seg_img, 'Classes')
        check(len(rows) >= 1 and 'background' in driver.find_element(By.ID, 'table').text, 'the class table is empty')
        upload('demo-det', det_img, 'Detections')
        # the live stream: frames in its view, figures filled in
        wait.until(lambda d: d.execute_script("const i = document.querySelector('.stream img'); return i && i.naturalWidth > 0"))
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '[data-k=fps]').text not in ('-', '0.0'))
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '.stream .last').text.startswith('frame '))
        frames = int(driver.find_element(By.CSS_SELECTOR, '[data-k=frames]').text)
        check(frames > 0, 'no frames counted')
        if os.environ.get('SERVE_PAGE_SCREENSHOT'):  # a look at the page (not part of the check)
            driver.save_screenshot(os.environ['SERVE_PAGE_SCREENSHOT'])
        errors = [e for e in driver.get_log('browser') if e['level'] in ('SEVERE', 'ERROR')]
        check(not errors, 'console errors: %r' % errors)
        urls = set()
        for e in driver.get_log('performance'):
            m = json.loads(e['message'])['message']
            if m['method'] == 'Network.requestWillBeSent':
                urls.add(m['params']['request']['url'])
        # (chrome:// pages are the browser's own, loaded before ours: they go nowhere)
        net = [u for u in urls if re.match(r'(https?|wss?|ftp):', u) or u.startswith('blob:')]
        outside = [u for u in net if not (u.startswith(origin + '/') or u.startswith('blob:' + origin + '/'))]
        check(not outside, 'requests that left the server: %r' % outside)
        check(any('/predict?format=overlay' in u for u in urls) and any(u.endswith('/streams/hall.mjpg') for u in urls),
              'the page made none of the expected requests: %r' % sorted(urls))
        print('serve_page_check: page rendered, 2 uploads with overlays and tables, a live stream, %d requests, '
              'all to the server, no console errors' % len(net))
    finally:
        driver.quit()
        srv.send_signal(signal.SIGTERM)
        rc = srv.wait(60)
        log.seek(0)
        check(rc == 0, 'the server exited %d after SIGTERM:\n%s' % (rc, log.read()))


if __name__ == '__main__':
    main()
