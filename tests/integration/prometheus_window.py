"""Waiting until the lab's Prometheus holds only samples taken after a
moment: a rate over its window then says what the VMs do since that moment,
whatever the scrapes' lag on a busy host (a fixed sleep either waits too
long or, when a scrape is late, not long enough)."""

import json
import time
import urllib.parse
import urllib.request


def oldest_sample_in_window(prometheus_url, selector, window):
    """The unix time of the oldest sample of `selector` a rate over the last
    `window` seconds uses (the one in force at the window's start), the
    oldest over every series it selects; None while Prometheus has none."""
    query = "min(min_over_time(timestamp(%s)[%ds:1s]))" % (selector, window)
    url = "%s/api/v1/query?%s" % (prometheus_url.rstrip("/"), urllib.parse.urlencode({"query": query}))
    with urllib.request.urlopen(url, timeout=10) as response:
        result = json.load(response)["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def wait_for_window_after(prometheus_url, selector, since, window, timeout=90):
    """Until every sample a `window`-second rate of `selector` uses was taken
    after `since` (a unix time); fails naming the query when Prometheus has
    none that new within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    oldest = None
    while time.monotonic() < deadline:
        oldest = oldest_sample_in_window(prometheus_url, selector, window)
        if oldest is not None and oldest >= since:
            return oldest
        time.sleep(0.5)
    raise AssertionError("Prometheus at %s still has samples of %s older than %.1f in its %d s window after %d s "
                         "(oldest: %r): is it scraping?" % (prometheus_url, selector, since, window, timeout, oldest))
