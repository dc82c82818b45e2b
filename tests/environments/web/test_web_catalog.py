"""The web packs list without Playwright, cover every MiniWoB++ task, and the small pure parts behave."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mintgym.action_spaces import InvalidAction, Key
from mintgym.env import registration
from mintgym.environments.web.keys import playwright_key, split_combo
from mintgym.environments.web.policy import UrlPolicy, is_loopback
from tests.conftest import DATA

pytestmark = pytest.mark.web


def test_every_miniwob_task_is_registered():
    shipped = set((DATA / "miniwob" / "miniwob_1.1.0_registered_tasks.txt").read_text().split())
    shipped |= set((DATA / "miniwob" / "miniwob_1.1.0_html_tasks.txt").read_text().split())
    ours = {t.id.removeprefix("miniwob/") for t in registration.tasks(prefix="miniwob/")}
    assert ours == shipped
    assert all(t.domain == "web" for t in registration.tasks(prefix="miniwob/"))


def test_miniwob_categories_come_from_the_agentlab_table():
    task = registration.task("miniwob/click-button")
    assert task.family == "miniwob/original" and "original" in task.tags
    assert "hidden-test" in registration.task("miniwob/ascending-numbers").tags
    assert "html-only" in registration.task("miniwob/simon-says").tags
    assert registration.task("miniwob/flight.AA").viewport == (375, 667)


def test_webapps_pack_has_25_tasks_on_three_apps_each_with_an_oracle():
    found = registration.tasks(prefix="webapps/")
    assert len(found) >= 25
    assert {t.app for t in found} == {"shop", "mail", "book"}
    assert all(t.has_oracle() for t in found)


def test_listing_imports_neither_playwright_nor_miniwob():
    code = ("import sys; from mintgym.env import registration; "
            "n = len(registration.tasks(domain='web')); "
            "print(n, 'playwright' in sys.modules, 'miniwob' in sys.modules)")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True)
    count, pw, mw = out.stdout.split()
    assert int(count) > 150 and pw == "False" and mw == "False"


def test_key_names_map_to_playwright():
    assert playwright_key("pagedown") == "PageDown"
    assert playwright_key("a") == "a"
    assert split_combo(Key(keys=["ctrl", "shift", "t"]).keys) == (["Control", "Shift"], ["t"])
    assert split_combo(Key(keys=["shift"]).keys) == ([], ["Shift"])
    with pytest.raises(InvalidAction, match="phone button"):
        playwright_key("volumeup")


def test_url_policy_allows_only_the_hosts_own_servers_by_default():
    policy = UrlPolicy(frozenset({8123}))
    assert policy.check("http://127.0.0.1:8123/shop/") is None
    assert "not a loopback" in policy.check("http://example.com/")
    assert "not a loopback" in policy.check("http://10.0.0.1:8123/")
    assert "loopback port" in policy.check("http://127.0.0.1:9999/")
    assert "scheme" in policy.check("file:///etc/passwd")
    assert "scheme" in policy.check("chrome://crash")
    assert UrlPolicy(frozenset(), allow=("example.com",)).check("https://example.com/x") is None
    assert UrlPolicy(frozenset(), allow_loopback=True).check("http://localhost:9/") is None
    assert is_loopback("::1") and is_loopback("127.8.0.1") and not is_loopback("128.0.0.1")
