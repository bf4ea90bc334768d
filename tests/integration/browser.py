"""The operators' pages in a real headless browser (Debian's chromium), and
their HTML checked as a strict parser reads it."""

import os
import re
import subprocess
from html.parser import HTMLParser

import pytest

CHROMIUM = "/usr/bin/chromium"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
# Elements of SVG that may close themselves (<line .../>).
SELF_CLOSING = {"line", "rect", "path", "circle", "polyline"}
CONSOLE = re.compile(r"CONSOLE|Uncaught", re.IGNORECASE)


class Page(HTMLParser):
    """The tables' rows (cells as text) by table class, the tags seen, and
    whether every element was closed in order."""

    def __init__(self):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.stack, self.problems, self.tags, self.tables = [], [], [], {}
        self._table, self._row, self._cell = None, None, None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table":
            self._table = dict(attrs).get("class") or ""
            self.tables.setdefault(self._table, [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in VOID and tag not in SELF_CLOSING:
            self.problems.append("<%s/> is not a void element" % tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append("</%s> closes %s" % (tag, self.stack[-1] if self.stack else "nothing"))
        else:
            self.stack.pop()
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def parse(html):
    page = Page()
    page.feed(html)
    page.close()
    return page


def chromium(url, tmp_path, *flags):
    """chromium headless on `url`: (DOM or stdout, the console lines of its
    log). The browser's own noise (no D-Bus, no GPU in a container) is not a
    console line."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail("%s is missing: Debian's chromium package is needed (apt-get install chromium)" % CHROMIUM,
                    pytrace=False)
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
               "--user-data-dir=%s" % (tmp_path / "chromium-profile"), "--window-size=1400,2400"] + list(flags) + [url]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout, [line for line in completed.stderr.splitlines() if CONSOLE.search(line)]
