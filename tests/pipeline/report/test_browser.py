"""The report page in a real headless browser: Debian's chromium, driven by selenium through Debian's
chromedriver (apt-get install -y chromium chromium-driver). It renders with its figures, the reasons filter
hides and shows rows, and the page requests nothing but itself.

Skipped on a machine without the browser; in CI (CI=true, as .ci/run sets) a missing browser fails instead.
"""
import json
import os
import shutil

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _missing() -> str | None:
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        return "needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs selenium (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def browser():
    missing = _missing()
    if missing:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI must run the browser test: {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--window-size=1280,2000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # the DevTools network events
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def requests_made(driver) -> list[str]:
    """Every URL the page asked for since the last call (DevTools Network.requestWillBeSent)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def _visible_rows(driver) -> list[str]:
    return [row.text for row in driver.find_elements("css selector", "#reasons-table tbody tr") if row.is_displayed()]


def test_page_renders_filters_and_loads_nothing(full_run, browser):
    run, _, _ = full_run
    page = (run / "report.html").as_uri()
    requests_made(browser)  # drop the log of the blank start page
    browser.get(page)
    assert browser.title == "run · corpusforge report"
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")  # every fold open
    # Every figure was decoded (a broken data: URI gives naturalWidth 0) and is laid out at the page's width.
    images = browser.find_elements("css selector", "figure img")
    assert len(images) >= 9
    for image in images:
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) > 1000
        assert image.size["width"] > 600
    sections = [s.get_attribute("id") for s in browser.find_elements("css selector", "main > section")]
    assert sections[:3] == ["funnel", "sources", "reasons"] and "near-duplicates" in sections
    assert browser.find_elements("css selector", "#near-duplicates mark")  # shared text highlighted

    # The removal-reasons filter: typing hides the rows without the words, clearing shows them all again.
    box = browser.find_element("id", "reason-filter")
    count = browser.find_element("id", "reason-filter-count")
    everything = _visible_rows(browser)
    assert len(everything) == 5 and count.text == "5 of 5 reasons shown"
    box.send_keys("dedup")
    rows = _visible_rows(browser)
    assert len(rows) == 2 and all(row.startswith("dedup") for row in rows) and count.text == "2 of 5 reasons shown"
    box.send_keys(" exact")
    assert [row.split()[1] for row in _visible_rows(browser)] == ["exact_duplicate"]
    box.clear()
    box.send_keys("no such reason")
    assert _visible_rows(browser) == [] and count.text == "0 of 5 reasons shown"
    browser.execute_script("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input'))", box)
    assert _visible_rows(browser) == everything

    # Nothing but the page itself went to a file or the network: the rest are its own data: URIs (the figures).
    requested = requests_made(browser)
    assert [url for url in requested if not url.startswith("data:image/png;base64,")] == [page]


def test_the_request_check_sees_a_page_that_loads_something(browser, tmp_path):
    """The check above can fail: a page with a remote image is caught."""
    html = tmp_path / "leaky.html"
    html.write_text('<!doctype html><title>leak</title><img src="http://127.0.0.1:9/pixel.png">')
    requests_made(browser)
    browser.get(html.as_uri())
    assert "http://127.0.0.1:9/pixel.png" in requests_made(browser)


def test_screenshot_shows_the_header_and_the_figures(full_run, browser, tmp_path):
    from PIL import Image

    run, _, _ = full_run
    browser.set_window_size(1280, 4000)
    browser.get((run / "report.html").as_uri())
    png = tmp_path / "report.png"
    assert browser.save_screenshot(str(png))
    image = Image.open(png).convert("RGB")
    # Not blank: the dark header, the light page, and many colours (text, tables, plots).
    assert image.getpixel((20, 20))[2] < 90  # navy header band
    assert image.getpixel((20, image.height - 300)) == (245, 247, 250)  # page background
    colours = image.resize((320, image.height // 4)).getcolors(maxcolors=1_000_000)
    assert len(colours) > 500
    # The embedded PNG figures were decoded and drawn: the palette's orange (normalize stage) appears only in them.
    orange = sum(n for n, (r, g, b) in colours if abs(r - 242) < 12 and abs(g - 142) < 12 and abs(b - 43) < 12)
    assert orange > 50


# The page's layout at a desktop width: it opens on the numbers and charts under MAX_HEIGHT CSS pixels (the
# built-in demo's page: 37,041 px before the sections folded and constant values left the small multiples;
# 11,110 px after), and no element is wider than the card that holds it, folded sections unfolded or not.
MAX_HEIGHT = 12_000
OVERFLOWING = """
const out = [];
for (const card of document.querySelectorAll('main > section, .hero .card')) {
  const box = card.getBoundingClientRect(), style = getComputedStyle(card);
  const right = box.right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
  for (const el of card.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width && r.right > right + 1) out.push(`${el.tagName.toLowerCase()}.${el.className} in #${card.id || 'card'} by ${Math.round(r.right - right)} px`);
  }
}
return out;"""


def test_page_is_short_folds_by_section_and_nothing_overflows_its_card(full_run, browser):
    run, _, _ = full_run
    browser.set_window_size(1400, 1000)
    browser.get((run / "report.html").as_uri())
    height = browser.execute_script("return document.documentElement.scrollHeight")
    assert height < MAX_HEIGHT
    assert browser.execute_script(OVERFLOWING) == []
    folds = browser.find_elements("css selector", "main > section > details.fold")
    assert len(folds) == len(browser.find_elements("css selector", "main > section")) >= 10
    shut = [f.find_element("xpath", "..").get_attribute("id") for f in folds if not f.get_attribute("open")]
    assert shut and set(shut) <= {"near-duplicates", "compare", "samples", "rejected", "details"}
    # A table-of-contents link unfolds its section; a click on a title folds and unfolds it.
    click = 'arguments[0].click()'  # as a reader's click, though the sticky table of contents may cover the spot
    browser.execute_script(click, browser.find_element("css selector", f'nav a[href="#{shut[0]}"]'))
    assert browser.find_element("css selector", f"#{shut[0]} > details").get_attribute("open") is not None
    browser.execute_script(click, browser.find_element("css selector", "#funnel > details > summary"))
    assert browser.find_element("css selector", "#funnel > details").get_attribute("open") is None
    assert browser.execute_script("return document.documentElement.scrollHeight") < height
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert browser.execute_script(OVERFLOWING) == []
