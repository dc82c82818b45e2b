"""Web tasks in task files: a page (inline HTML or a file beside the task file) served by the web host's
loopback server, scored from the state of that page the agent reaches only by doing the task.

Integrity (what an agent cannot forge): the page is served at ``/taskfiles/<key>/`` and nowhere else (no
folder listing, no sibling files, so the task file and its answers stay unreachable). At setup the page's
document gets a fresh per-episode nonce; every scorer reads the page only when the main page still shows
that very document. A ``goto`` to a page of the agent's making is refused by the session's URL policy, and
a ``goto`` to any loopback page -- this task page again, another task's page, a 404 -- loads a new document
without the nonce, so the task scores 0 (like MiniWoB's nonce guard in web/miniwob/task.py). The URL
scorer reads the path only: a fragment (``#done``) can be changed by a same-document ``goto``.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mintgym.env.taskfiles import DeclaredOracle, OracleHelper, TaskEntry, TaskFileError, TaskSource
from mintgym.environments.web import ui
from mintgym.environments.web.task import DEFAULT_VIEWPORT, WebTask

if TYPE_CHECKING:
    import random

    from mintgym.environments.web.env import WebEnvironment

PREFIX = "/taskfiles"
ROUTE_NAME = "mintgym-taskfiles"
#: Page key -> HTML, filled as tasks are built in this process (the env server's registry).
_PAGES: dict[str, str] = {}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Compare(_Strict):
    selector: str = Field(min_length=1, description="CSS selector of the element (the first match)")
    equals: str | None = None
    contains: str | None = None
    ignore_case: bool = False

    @model_validator(mode="after")
    def _one_test(self):
        if (self.equals is None) == (self.contains is None):
            raise ValueError("give exactly one of 'equals' and 'contains'")
        return self

    def holds(self, value: Any, base: str) -> bool:
        if not isinstance(value, str):
            return False
        want = self.equals if self.equals is not None else self.contains
        if self.ignore_case:
            value, want = value.lower(), want.lower()
        return value == want if self.equals is not None else want in value


class FieldScorer(_Compare):
    """The ``value`` of a form field (input, textarea, select)."""

    type: Literal["field"]


class TextScorer(_Compare):
    """An element's visible text (``innerText``, runs of white space as one space, trimmed)."""

    type: Literal["text"]


class CheckedScorer(_Strict):
    """Whether a checkbox or radio button is checked."""

    type: Literal["checked"]
    selector: str = Field(min_length=1)
    checked: bool = True

    def holds(self, value: Any, base: str) -> bool:
        return isinstance(value, bool) and value == self.checked


class UrlScorer(_Strict):
    """The path the page itself moved to with ``history.pushState`` (``/`` is where it starts)."""

    type: Literal["url"]
    path: str = Field(pattern=r"^/", description="relative to the task page, e.g. /done")

    def holds(self, value: Any, base: str) -> bool:
        return value == base + self.path.lstrip("/")


class JsScorer(_Strict):
    """A JavaScript expression evaluated in the page (a value the page's own code computed)."""

    type: Literal["js"]
    expression: str = Field(min_length=1)
    equals: Any = True

    def holds(self, value: Any, base: str) -> bool:
        return isinstance(value, dict) and "value" in value and value["value"] == self.equals


Scorer = Annotated[FieldScorer | TextScorer | CheckedScorer | UrlScorer | JsScorer, Field(discriminator="type")]


class Page(_Strict):
    html: str | None = Field(None, description="the page's HTML, inline")
    file: str | None = Field(None, description="an HTML file beside the task file")

    @model_validator(mode="after")
    def _one_source(self):
        if (self.html is None) == (self.file is None):
            raise ValueError("give exactly one of 'html' and 'file'")
        return self


class Click(OracleHelper):
    """Click the centre of the first visible element matching a CSS selector."""

    click: str

    def actions(self, env):
        return ui.click(env, self.click)


class ClickText(OracleHelper):
    """Click the innermost visible element whose text is exactly this."""

    click_text: str

    def actions(self, env):
        return ui.click_text(env, self.click_text)


class Fill(OracleHelper):
    """Click a field, select what it holds and type ``text``."""

    fill: str
    text: str

    def actions(self, env):
        return ui.fill(env, self.fill, self.text)


class WebTaskEntry(TaskEntry):
    domain: Literal["web"]
    page: Page
    scorer: list[Scorer] = Field(min_length=1, description="one scorer, or a list that must all hold")
    viewport: tuple[Annotated[int, Field(ge=100, le=4096)], Annotated[int, Field(ge=100, le=4096)]] = DEFAULT_VIEWPORT

    helpers: ClassVar[dict[str, type[OracleHelper]]] = {"click": Click, "click_text": ClickText, "fill": Fill}

    @field_validator("scorer", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    def referenced_files(self, source: TaskSource) -> list:
        return [source.resolve(self.page.file, "page.file", self.id)] if self.page.file else []

    def build(self, source: TaskSource, oracle) -> WebTask:
        if self.page.file:
            path = source.resolve(self.page.file, "page.file", self.id)
            try:
                html = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:
                raise TaskFileError(f"{source.file}: task {self.id!r}: field 'page.file': cannot read {path} "
                                    f"({err})") from None
        else:
            html = self.page.html
        key = hashlib.sha256(f"{self.id}\0{html}".encode()).hexdigest()[:24]
        _PAGES[key] = html
        scorers = tuple(self.scorer)
        return FileWebTask(id=self.id, instruction=self.instruction, max_steps=self.max_steps,
                           family=self.family or self.id.rsplit("/", 1)[0], tags=self.tags,
                           viewport=tuple(self.viewport), page_key=key, scorers=scorers, steps=oracle,
                           source=str(source.file))


_READ_JS = """([nonce, checks]) => {
  if (window.__mintgymTaskFile !== nonce) return null;
  return checks.map((c) => {
    try {
      if (c.type === 'url') return location.pathname;
      if (c.type === 'js') {
        const value = new Function('return (' + c.expression + ');')();
        return {value: value === undefined ? null : JSON.parse(JSON.stringify(value))};
      }
      const el = document.querySelector(c.selector);
      if (el === null) return null;
      if (c.type === 'field') return el.value === undefined ? null : String(el.value);
      if (c.type === 'checked') return !!el.checked;
      return (el.innerText || '').replace(/\\s+/g, ' ').trim();
    } catch (e) {
      return {error: String(e)};
    }
  });
}"""
_MARK_JS = """(nonce) => Object.defineProperty(window, '__mintgymTaskFile',
  {value: nonce, writable: false, configurable: false, enumerable: false}) && true"""


@dataclass
class FileWebTask(DeclaredOracle, WebTask):
    """A web task read from a task file (see the module docstring for what it scores and why it holds)."""

    page_key: str = ""
    scorers: tuple = ()
    steps: list | None = None
    source: str = ""

    @property
    def base_path(self) -> str:
        return f"{PREFIX}/{self.page_key}/"

    async def setup(self, env: WebEnvironment, rng: random.Random) -> None:
        ensure_route(env.host)
        url = env.host.server_origin + self.base_path
        await env.open(url)
        nonce = secrets.token_hex(16)
        await env.evaluate_js(_MARK_JS, nonce)
        env.task_info["taskfile"] = {"nonce": nonce, "url": url}

    async def observed(self, env: WebEnvironment) -> list | None:
        """What each scorer reads from the task's document, or None when the main page shows another one."""
        from playwright.async_api import Error as PlaywrightError

        state = env.task_info.get("taskfile")
        if not state:
            return None
        try:
            return await env.evaluate_js(_READ_JS, [state["nonce"], [s.model_dump() for s in self.scorers]])
        except PlaywrightError:  # the document went away under the call (a navigation committed)
            return None

    async def evaluate(self, env: WebEnvironment) -> float:
        values = await self.observed(env)
        info = env.task_info.setdefault("taskfile", {})
        if values is None:
            info["reason"] = f"the main page no longer shows this episode's task page ({env.main_page.url[:200]})"
            return 0.0
        held = [scorer.holds(value, self.base_path) for scorer, value in zip(self.scorers, values, strict=True)]
        info["scorers"] = held
        return 1.0 if all(held) else 0.0


def ensure_route(host: Any) -> None:
    """Serve task-file pages from the host's loopback server (added once, on first use)."""
    from starlette.routing import Route

    host.server.add_route(Route(PREFIX + "/{key}/", _serve, methods=["GET"], name=ROUTE_NAME))


async def _serve(request):
    from starlette.responses import HTMLResponse, PlainTextResponse

    html = _PAGES.get(request.path_params["key"])
    if html is None:
        return PlainTextResponse("no such task page", status_code=404)
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})
