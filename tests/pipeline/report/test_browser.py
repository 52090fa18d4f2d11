"""The report page in a real headless browser (Debian's chromium): it renders, with its figures, offline."""
import os
import pathlib
import subprocess

import pytest

CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install -y chromium)")


def screenshot(html: pathlib.Path, png: pathlib.Path, profile: pathlib.Path, height: int = 4000) -> None:
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size=1280,{height}", html.as_uri()],
        check=True, capture_output=True, timeout=120)


def test_page_renders_with_header_and_figures(full_run, tmp_path):
    from PIL import Image

    run, _, _ = full_run
    png = tmp_path / "report.png"
    screenshot(run / "report.html", png, tmp_path / "profile")
    assert png.exists() and png.stat().st_size > 50_000
    image = Image.open(png).convert("RGB")
    assert image.size == (1280, 4000)
    # Not blank: the dark header, the light page, and many colours (text, tables, plots).
    assert image.getpixel((20, 20))[2] < 90  # navy header band
    assert image.getpixel((20, 1500)) == (245, 247, 250)  # page background
    colours = image.resize((320, 1000)).getcolors(maxcolors=1_000_000)
    assert len(colours) > 500
    # The embedded PNG figures were decoded and drawn: the palette's orange (normalize stage) appears only in them.
    orange = sum(n for n, (r, g, b) in colours if abs(r - 242) < 12 and abs(g - 142) < 12 and abs(b - 43) < 12)
    assert orange > 50
