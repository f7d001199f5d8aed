"""Headless Chromium for the plan.html browser tests: Debian's chromium + chromium-driver (apt-get
as root when missing) driven by selenium, one session with console and network logging."""

from __future__ import annotations

import os
import shutil
import subprocess

CHROMIUM_PACKAGES = ("chromium", "chromium-driver")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def chromium_missing() -> bool:
    return not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER))


def install_chromium() -> str | None:
    """apt-get Debian's chromium and its driver (root only); None when installed, else why not."""
    if os.geteuid() != 0:
        return "not root (cannot apt-get chromium chromium-driver)"
    if shutil.which("apt-get") is None:
        return "no apt-get"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    steps = (["apt-get", "update", "-qq"],
             ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *CHROMIUM_PACKAGES])
    for step in steps:
        done = subprocess.run(step, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              check=False)
        if done.returncode:
            return f"{' '.join(step)} failed: {done.stderr.strip()[-300:]}"
    return "chromium still missing after apt-get" if chromium_missing() else None


def start_chromium(width: int = 1920, height: int = 1400):
    """A headless Chromium WebDriver logging the console and the network (CDP performance log)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
