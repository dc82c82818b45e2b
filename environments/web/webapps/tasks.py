"""The ``webapps/...`` task pack: goals on the shop, mail and room-booking apps, scored from server state.

Each task resets the session's app state (optionally changes it, ``prepare``), opens the app, and is
scored by ``check`` on what the server holds afterwards: the orders placed, the mail sent, the bookings.
Every task ships an oracle that reads the DOM and acts with pixel clicks and typing only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mintgym.action_spaces import ActionModel, Done, Key, Type
from mintgym.environments.web import ui
from mintgym.environments.web.task import WebTask
from mintgym.environments.web.webapps.state import SessionState

if TYPE_CHECKING:
    from mintgym.environments.web.env import WebEnvironment

VIEWPORT = (800, 600)
Plan = Callable[["WebEnvironment"], AsyncIterator[ActionModel]]


@dataclass
class WebAppTask(WebTask):
    """A goal on one of the project's web apps, checked against that app's server-side state."""

    app: str = "shop"
    check: Callable[[SessionState], bool] = field(default=lambda s: False, repr=False)
    plan: Plan | None = field(default=None, repr=False)
    prepare: Callable[[SessionState], None] | None = field(default=None, repr=False)
    viewport: tuple[int, int] = VIEWPORT
    max_steps: int = 30

    async def setup(self, env: WebEnvironment, rng) -> str | None:
        state = env.host.apps.reset(env.session_token)
        if self.prepare is not None:
            self.prepare(state)
        await env.open(f"{env.host.server_origin}/{self.app}/index.html")
        await env.main_page.wait_for_selector("body[data-ready]", timeout=60_000)
        return None

    async def evaluate(self, env: WebEnvironment) -> float:
        return 1.0 if self.check(env.host.apps.get(env.session_token)) else 0.0

    async def oracle(self, env: WebEnvironment) -> AsyncIterator[ActionModel]:
        if self.plan is None:
            raise NotImplementedError(f"task {self.id!r} has no plan")
        async for action in self.plan(env):
            yield action
        yield Done()


# ---- plans (oracles) ---------------------------------------------------------------------------------
async def _seq(env, *steps):
    for step in steps:
        async for action in step:
            yield action


def _buy(items: list[tuple[int, int]], name: str, address: str, shipping: str = "standard",
         in_cart: bool = False, remove: tuple[int, ...] = ()) -> Plan:
    async def plan(env):
        for pid, qty in items:
            async for a in ui.click(env, "#nav-shop"):
                yield a
            async for a in ui.click(env, f'[data-product="{pid}"]'):
                yield a
            if qty != 1:
                async for a in ui.fill(env, "#qty", str(qty)):
                    yield a
            async for a in ui.click(env, "#add"):
                yield a
            await ui.wait_js(env, "() => document.getElementById('added').textContent.length > 0")
        async for a in ui.click(env, "#nav-cart"):
            yield a
        for pid in remove:
            async for a in ui.click(env, f'[data-remove="{pid}"]'):
                yield a
            await ui.wait_js(env, "() => document.body && document.body.dataset.ready && "
                                  f"!document.querySelector('[data-remove=\"{pid}\"]')")
        if in_cart:
            return
        async for a in _seq(env, ui.click(env, "#checkout"), ui.fill(env, "#name", name),
                            ui.fill(env, "#address", address)):
            yield a
        if shipping == "express":
            async for a in ui.click(env, "#ship-express"):
                yield a
        async for a in ui.click(env, "#place-order"):
            yield a
        await ui.wait_for(env, "#thanks")
    return plan


def _order_is(items: dict[int, int], name: str | None = None, address: str | None = None,
              shipping: str = "standard", previous: int = 0) -> Callable[[SessionState], bool]:
    def check(s: SessionState) -> bool:
        if len(s.shop.orders) != previous + 1:
            return False
        order = s.shop.orders[-1]
        return (order["items"] == {str(k): v for k, v in items.items()} and order["shipping"] == shipping
                and (name is None or order["name"].lower() == name.lower())
                and (address is None or order["address"].lower() == address.lower()))
    return check


def _compose(to: str, subject: str, body: str, start: tuple[str, ...] = ("#nav-compose",),
             keep_subject: bool = False, keep_to: bool = False) -> Plan:
    async def plan(env):
        for selector in start:
            async for a in ui.click(env, selector):
                yield a
        await ui.wait_for(env, "#send")
        if not keep_to:
            async for a in ui.fill(env, "#to", to):
                yield a
        if not keep_subject:
            async for a in ui.fill(env, "#subject", subject):
                yield a
        if body:
            async for a in ui.click(env, "#body"):
                yield a
            yield Key(keys=("ctrl", "home"))
            yield Type(text=body)
        async for a in ui.click(env, "#send"):
            yield a
        await ui.wait_for(env, "#sent-title")
    return plan


def _sent(to: list[str], subject: str, body_has: str = "") -> Callable[[SessionState], bool]:
    def check(s: SessionState) -> bool:
        return len(s.mail.sent) == 1 and sorted(a.lower() for a in s.mail.sent[0]["to"]) == sorted(to) and \
            s.mail.sent[0]["subject"].lower() == subject.lower() and body_has.lower() in s.mail.sent[0]["body"].lower()
    return check


def _message_action(mids: tuple[int, ...], button: str, done: str) -> Plan:
    async def plan(env):
        for mid in mids:
            async for a in ui.click(env, "#nav-inbox"):
                yield a
            async for a in ui.click(env, f'[data-message="{mid}"]'):
                yield a
            async for a in ui.click(env, button):
                yield a
            await ui.wait_js(env, done)
    return plan


def _book(slots: list[tuple[str, str, int]], title: str) -> Plan:
    async def plan(env):
        for room, day, hour in slots:
            async for a in _seq(env, ui.click(env, "#nav-rooms"), ui.click(env, f'[data-room="{room}"]'),
                                ui.click(env, f'[data-slot="{day}-{hour}"]'), ui.fill(env, "#title", title),
                                ui.click(env, "#confirm")):
                yield a
            await ui.wait_for(env, "#mine-title")
    return plan


def _cancel(title: str) -> Plan:
    async def plan(env):
        async for a in ui.click(env, "#nav-mine"):
            yield a
        async for a in ui.click(env, f'[data-cancel="{title}"]'):
            yield a
        await ui.wait_js(env, "() => document.body && document.body.dataset.ready && "
                              f"!document.querySelector('[data-cancel=\"{title}\"]')")
    return plan


def _then(*plans: Plan) -> Plan:
    async def plan(env):
        for p in plans:
            async for a in p(env):
                yield a
    return plan


def _booked(expected: list[tuple[str, str, int]], title: str) -> Callable[[SessionState], bool]:
    def check(s: SessionState) -> bool:
        titled = sorted((b["room"], b["day"], b["hour"]) for b in s.book.bookings if b["mine"]
                        and b["title"].lower() == title.lower())
        return titled == sorted(expected)
    return check


def _mine_unchanged_except(s: SessionState, title: str) -> bool:
    return all(b["title"] != title for b in s.book.bookings if b["mine"])


def _prefill_cart(s: SessionState) -> None:
    s.shop.cart = {2: 1, 6: 1}


def _past_order(s: SessionState) -> None:
    s.shop.orders.append({"id": 1, "items": {"6": 1}, "name": "Kim Lee", "address": "4 Oak Lane",
                          "shipping": "standard"})


def _starred(ids: set[int]) -> Callable[[SessionState], bool]:
    return lambda s: {m["id"] for m in s.mail.inbox if m["starred"]} == ids and len(s.mail.inbox) == 6


def _deleted(ids: set[int]) -> Callable[[SessionState], bool]:
    return lambda s: {m["id"] for m in s.mail.trash} == ids and not s.mail.sent


_RETRO_FREE = ("aurora", "Thu", 11)


def tasks() -> list[WebAppTask]:
    shop = {"app": "shop", "family": "webapps/shop", "tags": ("webapps", "shop")}
    mail = {"app": "mail", "family": "webapps/mail", "tags": ("webapps", "mail")}
    book = {"app": "book", "family": "webapps/book", "tags": ("webapps", "booking")}
    return [
        # ---- shop ----
        WebAppTask("webapps/shop-buy-lamp",
                   "Buy one Desk Lamp, shipped to Ada Park, 1 Main St, with standard shipping.",
                   check=_order_is({4: 1}, "Ada Park", "1 Main St"), plan=_buy([(4, 1)], "Ada Park", "1 Main St"),
                   **shop),
        WebAppTask("webapps/shop-buy-three-notebooks", "Order 3 Notebooks for Ada Park, 1 Main St.",
                   check=_order_is({5: 3}, "Ada Park", "1 Main St"), plan=_buy([(5, 3)], "Ada Park", "1 Main St"),
                   **shop),
        WebAppTask("webapps/shop-buy-two-items",
                   "In one order, buy a Red Mug and a Wool Scarf for Sam Ortiz, 22 Bay Road.",
                   check=_order_is({1: 1, 7: 1}, "Sam Ortiz", "22 Bay Road"),
                   plan=_buy([(1, 1), (7, 1)], "Sam Ortiz", "22 Bay Road"), **shop),
        WebAppTask("webapps/shop-cheapest-clothing", "Buy the cheapest clothing item for Ada Park, 1 Main St.",
                   check=_order_is({9: 1}, "Ada Park", "1 Main St"), plan=_buy([(9, 1)], "Ada Park", "1 Main St"),
                   **shop),
        WebAppTask("webapps/shop-express-jacket", "Buy a Rain Jacket for Ada Park, 1 Main St, with express shipping.",
                   check=_order_is({8: 1}, "Ada Park", "1 Main St", "express"),
                   plan=_buy([(8, 1)], "Ada Park", "1 Main St", "express"), **shop),
        WebAppTask("webapps/shop-cart-kettle", "Put one Steel Kettle in the cart, but do not place an order.",
                   check=lambda s: s.shop.cart == {3: 1} and not s.shop.orders,
                   plan=_buy([(3, 1)], "", "", in_cart=True), **shop),
        WebAppTask("webapps/shop-remove-and-order",
                   "Remove the Blue Mug from the cart, then order what is left for Lee Wong, 9 Elm Road.",
                   prepare=_prefill_cart, check=_order_is({6: 1}, "Lee Wong", "9 Elm Road"),
                   plan=_buy([], "Lee Wong", "9 Elm Road", remove=(2,)), **shop),
        WebAppTask("webapps/shop-mixed-quantities", "Order 2 Blue Mugs and 1 Steel Kettle for Lee Wong, 9 Elm Road.",
                   check=_order_is({2: 2, 3: 1}, "Lee Wong", "9 Elm Road"),
                   plan=_buy([(2, 2), (3, 1)], "Lee Wong", "9 Elm Road"), **shop),
        WebAppTask("webapps/shop-reorder",
                   "Order again the product of your previous order (see Orders), for Kim Lee, 4 Oak Lane.",
                   prepare=_past_order, check=_order_is({6: 1}, "Kim Lee", "4 Oak Lane", previous=1),
                   plan=_buy([(6, 1)], "Kim Lee", "4 Oak Lane"), **shop),
        # ---- mail ----
        WebAppTask("webapps/mail-send", 'Send an email to sam@example.com with the subject "Lunch" and the text '
                   '"Are you free at noon?".', check=_sent(["sam@example.com"], "Lunch", "Are you free at noon?"),
                   plan=_compose("sam@example.com", "Lunch", "Are you free at noon?"), **mail),
        WebAppTask("webapps/mail-send-two", 'Send the subject "Minutes" and text "Notes attached." to both '
                   "ana@example.com and ben@example.com in one email.",
                   check=_sent(["ana@example.com", "ben@example.com"], "Minutes", "Notes attached."),
                   plan=_compose("ana@example.com, ben@example.com", "Minutes", "Notes attached."), **mail),
        WebAppTask("webapps/mail-reply", 'Reply to Priya\'s email about the quarterly report with "Thanks, I will '
                   'review it."', check=_sent(["priya@example.com"], "Re: Quarterly report", "I will review it"),
                   plan=_compose("", "", "Thanks, I will review it.", start=('[data-message="1"]', "#reply"),
                                 keep_subject=True, keep_to=True), **mail),
        WebAppTask("webapps/mail-forward", "Forward the server maintenance email to ops@example.com.",
                   check=_sent(["ops@example.com"], "Fwd: Server maintenance", "down on Sunday"),
                   plan=_compose("ops@example.com", "", "", start=('[data-message="4"]', "#forward"),
                                 keep_subject=True), **mail),
        WebAppTask("webapps/mail-delete-newsletter", 'Delete the "50% off everything" newsletter.',
                   check=_deleted({3}),
                   plan=_message_action((3,), "#delete", "() => !!document.getElementById('inbox')"),
                   **mail),
        WebAppTask("webapps/mail-delete-all-newsletters", "Delete every email from newsletter@deals.example.",
                   check=_deleted({3, 6}),
                   plan=_message_action((3, 6), "#delete", "() => !!document.getElementById('inbox')"), **mail),
        WebAppTask("webapps/mail-star-marco", "Star the email from Marco.", check=_starred({2}),
                   plan=_message_action((2,), "#star",
                                        "() => document.getElementById('state').textContent === 'Starred'"),
                   **mail),
        WebAppTask("webapps/mail-star-offsite", "Star every email about the offsite.", check=_starred({2, 5}),
                   plan=_message_action((2, 5), "#star",
                                        "() => document.getElementById('state').textContent === 'Starred'"), **mail),
        # ---- room booking ----
        WebAppTask("webapps/book-birch-tuesday", 'Book the Birch room on Tuesday at 10:00 for a meeting titled '
                   '"Design review".', check=_booked([("birch", "Tue", 10)], "Design review"),
                   plan=_book([("birch", "Tue", 10)], "Design review"), **book),
        WebAppTask("webapps/book-aurora-monday", 'Book Aurora on Monday at 9:00, titled "1:1".',
                   check=_booked([("aurora", "Mon", 9)], "1:1"), plan=_book([("aurora", "Mon", 9)], "1:1"), **book),
        WebAppTask("webapps/book-cedar-friday", 'Book Cedar on Friday at 15:00 for "All hands".',
                   check=_booked([("cedar", "Fri", 15)], "All hands"), plan=_book([("cedar", "Fri", 15)], "All hands"),
                   **book),
        WebAppTask("webapps/book-big-room", 'Book a room with at least 8 seats that is free on Wednesday at 14:00, '
                   'titled "Planning".', check=_booked([("cedar", "Wed", 14)], "Planning"),
                   plan=_book([("cedar", "Wed", 14)], "Planning"), **book),
        WebAppTask("webapps/book-cancel", 'Cancel your booking "Budget sync".',
                   check=lambda s: _mine_unchanged_except(s, "Budget sync") and
                   sum(b["mine"] for b in s.book.bookings) == 1, plan=_cancel("Budget sync"), **book),
        WebAppTask("webapps/book-move-lunch", 'Move your "Team lunch" from Thursday 12:00 to Friday 12:00 in the '
                   "same room.", check=_booked([("birch", "Fri", 12)], "Team lunch"),
                   plan=_then(_cancel("Team lunch"), _book([("birch", "Fri", 12)], "Team lunch")), **book),
        WebAppTask("webapps/book-earliest-aurora", 'Book Aurora on Thursday at the earliest free hour, titled "Retro".',
                   check=_booked([_RETRO_FREE], "Retro"), plan=_book([_RETRO_FREE], "Retro"), **book),
        WebAppTask("webapps/book-two-slots", 'Book Birch on Monday at both 11:00 and 12:00, each titled "Workshop".',
                   check=_booked([("birch", "Mon", 11), ("birch", "Mon", 12)], "Workshop"),
                   plan=_book([("birch", "Mon", 11), ("birch", "Mon", 12)], "Workshop"), **book),
        WebAppTask("webapps/book-check-mine", 'Book Cedar on Tuesday at 9:00 titled "Kickoff" and keep your other '
                   "bookings.", check=lambda s: _booked([("cedar", "Tue", 9)], "Kickoff")(s) and
                   sum(b["mine"] for b in s.book.bookings) == 3, plan=_book([("cedar", "Tue", 9)], "Kickoff"), **book),
    ]
