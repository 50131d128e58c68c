"""Opens evaluation reports in headless Chromium (Debian's chromium + chromedriver, through
python3-selenium) and checks that every section listed is present and laid out, that the page
logged no console error, and that it made no network request (no request other than the
report's own file:// URL; data: URIs are the inline thumbnails and are not requests).

    /usr/bin/python3 tests/report_browser.py REPORT.html SECTION_ID [SECTION_ID ...]

Chromium runs with the project's flags (TEAM notes): --headless --no-sandbox --disable-gpu
--disable-background-networking --disable-component-update --no-first-run
--proxy-server=127.0.0.1:9 and a new, empty --user-data-dir. Exit 0 when every check holds."""
import json
import os
import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    report, sections = os.path.abspath(sys.argv[1]), sys.argv[2:]
    url = 'file://' + report
    profile = tempfile.mkdtemp(prefix='rv_chromium_')
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which('chromium') or '/usr/bin/chromium'
    for a in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
              '--disable-component-update', '--no-first-run', '--proxy-server=127.0.0.1:9',
              '--user-data-dir=' + profile, '--window-size=1280,900', '--disable-dev-shm-usage'):
        opts.add_argument(a)
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL', 'performance': 'ALL'})
    service = Service(shutil.which('chromedriver') or '/usr/bin/chromedriver')
    driver = webdriver.Chrome(service=service, options=opts)
    problems = []
    try:
        driver.set_page_load_timeout(60)
        t0 = time.monotonic()
        driver.get(url)
        load_s = time.monotonic() - t0
        state = driver.execute_script('return document.readyState')
        if state != 'complete':
            problems.append('document.readyState is %r after load' % state)
        for sid in sections:
            box = driver.execute_script(
                'var e = document.getElementById(arguments[0]); if (!e) return null;'
                'var r = e.getBoundingClientRect(); return [r.width, r.height];', sid)
            if box is None:
                problems.append('no section #%s' % sid)
            elif box[0] <= 0 or box[1] <= 0:
                problems.append('section #%s is not laid out (%s)' % (sid, box))
        # every inline image decoded
        broken = driver.execute_script(
            'return Array.prototype.filter.call(document.images, function(i){return !i.complete || !i.naturalWidth;})'
            '.length + Array.prototype.filter.call(document.querySelectorAll("svg image"), function(i){'
            'return !(i.getAttribute("href") || "").startsWith("data:image/");}).length')
        if broken:
            problems.append('%d image(s) not decoded or not inline' % broken)
        # the table sorter runs without errors
        driver.execute_script('var th = document.querySelector("table.sortable th:nth-child(3)"); if (th) th.click();')
        for e in driver.get_log('browser'):
            if e.get('level') in ('SEVERE', 'ERROR', 'WARNING'):
                problems.append('console %s: %s' % (e.get('level'), e.get('message')))
        for e in driver.get_log('performance'):
            msg = json.loads(e['message'])['message']
            if msg.get('method') != 'Network.requestWillBeSent':
                continue
            req, doc = msg['params']['request']['url'], msg['params'].get('documentURL', '')
            # the page's own requests (any but itself and data: URIs), and any http(s) / ws request of
            # the browser at all; chrome:// pages of the browser's own UI are not the report's
            if (doc == url and req != url and not req.startswith('data:')) or \
                    req.split(':', 1)[0] in ('http', 'https', 'ws', 'wss', 'ftp'):
                problems.append('network request: %s (from %s)' % (req, doc))
        print('report_browser: %s loaded in %.2f s, %d sections checked' % (report, load_s, len(sections)))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    for p in problems:
        print('report_browser: ' + p, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
