"""The dashboard tests' browser: headless Chromium through Debian's chromedriver (``make tools``), one profile per
test, its console log kept (``goog:loggingPrefs``) for the tests that read it."""
from __future__ import annotations

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from tests.dashboard.test_dashboard import CHROME_ARGS, CHROMEDRIVER


@pytest.fixture
def browser(tmp_path):
    if not CHROMEDRIVER.exists():
        pytest.fail(f"{CHROMEDRIVER} is missing: run `make tools` (installs Debian's chromium and chromium-driver)",
                    pytrace=False)
    options = webdriver.ChromeOptions()
    for arg in CHROME_ARGS + [f"--user-data-dir={tmp_path / 'chrome-profile'}"]:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    yield driver
    driver.quit()
