"""The web apps' JSON API and static pages, with state per session (the ``mgsid`` cookie).

Pages are static HTML + a little JS under ``webapps/<app>/``; the JS reads and changes state through
``/api/<app>/...``. Every session's browser context carries its own cookie (``mgsid``: HttpOnly,
SameSite=Strict), so sessions never see each other's carts, mail or bookings.

The API answers only the app's own pages: a same-origin ``fetch`` (``Sec-Fetch-Site: same-origin``,
``Sec-Fetch-Dest: empty``, headers a page cannot forge) whose referrer is a page of that app, and for a POST
an ``Origin`` of this server. A typed URL, a link, a form, an iframe or a page of the agent's making
(``data:``, another port) gets a 403, so the state the scorer reads changes only through the app's UI.
Scorers never use this API; they read :class:`AppStore` in the host process.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from mintgym.environments.web.webapps.state import (
    DAYS,
    HOURS,
    INBOX,
    PRODUCTS,
    ROOMS,
    SessionState,
    product,
)

APPS_DIR = Path(__file__).parent
APPS = ("shop", "mail", "book")


class AppStore:
    """Session token -> that session's app state."""

    def __init__(self) -> None:
        self._states: dict[str, SessionState] = {}

    def reset(self, token: str) -> SessionState:
        self._states[token] = SessionState()
        return self._states[token]

    def get(self, token: str) -> SessionState:
        if token not in self._states:
            self._states[token] = SessionState()
        return self._states[token]

    def drop(self, token: str) -> None:
        self._states.pop(token, None)

    def __len__(self) -> int:
        return len(self._states)


class ApiError(Exception):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def webapp_routes(store: AppStore) -> list[BaseRoute]:
    """The API routes and one static mount per app (``/shop/``, ``/mail/``, ``/book/``, ``/common/``)."""

    def endpoint(app: str, fn: Callable[[SessionState, dict], dict]):
        async def handle(request: Request) -> JSONResponse:
            refusal = _refusal(request, app)
            if refusal is not None:
                return JSONResponse({"error": refusal}, status_code=403)
            token = request.cookies.get("mgsid")
            if not token:
                return JSONResponse({"error": "no session cookie"}, status_code=401)
            body = {}
            if request.method == "POST":
                try:
                    body = await request.json()
                except ValueError:
                    return JSONResponse({"error": "the body is not JSON"}, status_code=400)
                if not isinstance(body, dict):
                    return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
            try:
                return JSONResponse(fn(store.get(token), body))
            except ApiError as err:
                return JSONResponse({"error": str(err)}, status_code=err.status)
        return handle

    routes: list[BaseRoute] = [
        Route("/api/shop/state", endpoint("shop", _shop_state), methods=["GET"]),
        Route("/api/shop/cart", endpoint("shop", _shop_add), methods=["POST"]),
        Route("/api/shop/remove", endpoint("shop", _shop_remove), methods=["POST"]),
        Route("/api/shop/order", endpoint("shop", _shop_order), methods=["POST"]),
        Route("/api/mail/state", endpoint("mail", _mail_state), methods=["GET"]),
        Route("/api/mail/send", endpoint("mail", _mail_send), methods=["POST"]),
        Route("/api/mail/star", endpoint("mail", _mail_star), methods=["POST"]),
        Route("/api/mail/delete", endpoint("mail", _mail_delete), methods=["POST"]),
        Route("/api/book/state", endpoint("book", _book_state), methods=["GET"]),
        Route("/api/book/book", endpoint("book", _book_book), methods=["POST"]),
        Route("/api/book/cancel", endpoint("book", _book_cancel), methods=["POST"]),
    ]
    for name in (*APPS, "common"):
        routes.append(Mount(f"/{name}", app=StaticFiles(directory=APPS_DIR / name, html=True), name=name))
    return routes


def _refusal(request: Request, app: str) -> str | None:
    """Why ``request`` may not use ``app``'s API (None when it is a fetch from one of that app's pages)."""
    headers = request.headers
    if headers.get("sec-fetch-site") != "same-origin" or headers.get("sec-fetch-dest") != "empty":
        return f"the {app} API answers only fetches from the {app} app's own pages"
    origin = f"{request.url.scheme}://{request.url.netloc}"
    if not headers.get("referer", "").startswith(f"{origin}/{app}/"):
        return f"the {app} API answers only the {app} app's own pages"
    if request.method != "GET" and headers.get("origin") != origin:
        return f"the {app} API takes changes only from this server's pages"
    return None


def _int(body: dict, key: str) -> int:
    try:
        return int(body[key])
    except (KeyError, TypeError, ValueError):
        raise ApiError(f"field {key!r} must be an integer") from None


def _text(body: dict, key: str, required: bool = True) -> str:
    value = body.get(key, "")
    if not isinstance(value, str):
        raise ApiError(f"field {key!r} must be text")
    value = value.strip()
    if required and not value:
        raise ApiError(f"field {key!r} is required")
    return value


# ---- shop --------------------------------------------------------------------------------------------
def _shop_state(s: SessionState, _body: dict) -> dict:
    cart = [{**product(pid), "qty": qty} for pid, qty in s.shop.cart.items()]
    return {"products": list(PRODUCTS), "cart": cart, "orders": s.shop.orders}


def _shop_add(s: SessionState, body: dict) -> dict:
    pid, qty = _int(body, "id"), _int(body, "qty")
    try:
        product(pid)
    except KeyError:
        raise ApiError(f"no product {pid}", 404) from None
    if not 1 <= qty <= 99:
        raise ApiError("quantity must be between 1 and 99")
    s.shop.cart[pid] = s.shop.cart.get(pid, 0) + qty
    return _shop_state(s, {})


def _shop_remove(s: SessionState, body: dict) -> dict:
    s.shop.cart.pop(_int(body, "id"), None)
    return _shop_state(s, {})


def _shop_order(s: SessionState, body: dict) -> dict:
    if not s.shop.cart:
        raise ApiError("the cart is empty")
    shipping = _text(body, "shipping")
    if shipping not in ("standard", "express"):
        raise ApiError("shipping must be standard or express")
    order = {"id": len(s.shop.orders) + 1, "items": {str(k): v for k, v in s.shop.cart.items()},
             "name": _text(body, "name"), "address": _text(body, "address"), "shipping": shipping}
    s.shop.orders.append(order)
    s.shop.cart = {}
    return {"order": order}


# ---- mail --------------------------------------------------------------------------------------------
def _mail_state(s: SessionState, _body: dict) -> dict:
    return {"inbox": s.mail.inbox, "sent": s.mail.sent, "trash": s.mail.trash}


def _mail_send(s: SessionState, body: dict) -> dict:
    to = [a.strip() for a in _text(body, "to").split(",") if a.strip()]
    message = {"id": len(s.mail.sent) + 1, "to": to, "subject": _text(body, "subject"),
               "body": _text(body, "body", required=False)}
    s.mail.sent.append(message)
    return {"sent": message}


def _find_mail(s: SessionState, mid: int) -> dict:
    for m in s.mail.inbox:
        if m["id"] == mid:
            return m
    raise ApiError(f"no message {mid} in the inbox", 404)


def _mail_star(s: SessionState, body: dict) -> dict:
    m = _find_mail(s, _int(body, "id"))
    m["starred"] = not m["starred"]
    return {"message": m}


def _mail_delete(s: SessionState, body: dict) -> dict:
    m = _find_mail(s, _int(body, "id"))
    s.mail.inbox.remove(m)
    s.mail.trash.append(m)
    return {"deleted": m["id"]}


# ---- room booking ------------------------------------------------------------------------------------
def _book_state(s: SessionState, _body: dict) -> dict:
    return {"rooms": list(ROOMS), "days": list(DAYS), "hours": list(HOURS), "bookings": s.book.bookings}


def _book_book(s: SessionState, body: dict) -> dict:
    room, day, hour = _text(body, "room"), _text(body, "day"), _int(body, "hour")
    if room not in {r["id"] for r in ROOMS} or day not in DAYS or hour not in HOURS:
        raise ApiError("no such room, day or hour")
    if any(b["room"] == room and b["day"] == day and b["hour"] == hour for b in s.book.bookings):
        raise ApiError("that slot is already booked", 409)
    booking = {"id": s.book.next_id, "room": room, "day": day, "hour": hour,
               "title": _text(body, "title"), "mine": True}
    s.book.next_id += 1
    s.book.bookings.append(booking)
    return {"booking": booking}


def _book_cancel(s: SessionState, body: dict) -> dict:
    bid = _int(body, "id")
    for b in s.book.bookings:
        if b["id"] == bid and b["mine"]:
            s.book.bookings.remove(b)
            return {"cancelled": bid}
    raise ApiError(f"no booking {bid} of yours", 404)


__all__ = ["INBOX", "AppStore", "webapp_routes"]
