"""Server-side state of the three web apps, one copy per session, reset at every episode.

Tasks score these records (what was ordered, sent, booked), never what the page shows.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

PRODUCTS = (
    {"id": 1, "name": "Red Mug", "category": "kitchen", "price": 8.50},
    {"id": 2, "name": "Blue Mug", "category": "kitchen", "price": 9.00},
    {"id": 3, "name": "Steel Kettle", "category": "kitchen", "price": 24.00},
    {"id": 4, "name": "Desk Lamp", "category": "office", "price": 19.99},
    {"id": 5, "name": "Notebook", "category": "office", "price": 3.50},
    {"id": 6, "name": "Fountain Pen", "category": "office", "price": 12.00},
    {"id": 7, "name": "Wool Scarf", "category": "clothing", "price": 15.00},
    {"id": 8, "name": "Rain Jacket", "category": "clothing", "price": 45.00},
    {"id": 9, "name": "Cotton T-Shirt", "category": "clothing", "price": 11.00},
)

INBOX = (
    {"id": 1, "sender": "priya@example.com", "subject": "Quarterly report",
     "body": "Hi, the quarterly report is attached. Please review it by Friday."},
    {"id": 2, "sender": "marco@example.com", "subject": "Offsite agenda",
     "body": "Here is the draft agenda for the offsite next month."},
    {"id": 3, "sender": "newsletter@deals.example", "subject": "50% off everything",
     "body": "Our biggest sale of the year starts now."},
    {"id": 4, "sender": "it@example.com", "subject": "Server maintenance",
     "body": "The mail server will be down on Sunday from 2 to 4 am."},
    {"id": 5, "sender": "priya@example.com", "subject": "Offsite travel",
     "body": "Please book your train tickets for the offsite before Monday."},
    {"id": 6, "sender": "newsletter@deals.example", "subject": "Last chance",
     "body": "The sale ends tonight."},
)

ROOMS = (
    {"id": "aurora", "name": "Aurora", "seats": 4},
    {"id": "birch", "name": "Birch", "seats": 8},
    {"id": "cedar", "name": "Cedar", "seats": 12},
)
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri")
HOURS = tuple(range(9, 17))

#: Bookings made by other people; the agent's own bookings have ``mine=True``.
BOOKINGS = (
    {"room": "birch", "day": "Wed", "hour": 14, "title": "Sales call", "mine": False},
    {"room": "aurora", "day": "Thu", "hour": 9, "title": "Standup", "mine": False},
    {"room": "aurora", "day": "Thu", "hour": 10, "title": "Interview", "mine": False},
    {"room": "cedar", "day": "Mon", "hour": 13, "title": "Budget sync", "mine": True},
    {"room": "birch", "day": "Thu", "hour": 12, "title": "Team lunch", "mine": True},
)


@dataclass
class ShopState:
    cart: dict[int, int] = field(default_factory=dict)
    orders: list[dict] = field(default_factory=list)


@dataclass
class MailState:
    inbox: list[dict] = field(default_factory=lambda: [dict(m, starred=False) for m in INBOX])
    sent: list[dict] = field(default_factory=list)
    trash: list[dict] = field(default_factory=list)


@dataclass
class BookState:
    bookings: list[dict] = field(default_factory=lambda: [dict(b, id=i + 1) for i, b in enumerate(BOOKINGS)])
    next_id: int = len(BOOKINGS) + 1


@dataclass
class SessionState:
    """Everything one session's apps hold."""

    shop: ShopState = field(default_factory=ShopState)
    mail: MailState = field(default_factory=MailState)
    book: BookState = field(default_factory=BookState)

    def snapshot(self) -> SessionState:
        return copy.deepcopy(self)


def product(pid: int) -> dict:
    for p in PRODUCTS:
        if p["id"] == pid:
            return p
    raise KeyError(pid)
