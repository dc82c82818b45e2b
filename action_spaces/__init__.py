"""The shared pixel action space: typed actions, per-domain action sets, prompts and the one parser.

Imports nothing heavy (no torch, Ray, Playwright or FastAPI) and nothing else of MintGym.
"""

from mintgym.action_spaces.actions import (
    ACTION_ADAPTER, ACTION_TYPES, Action, ActionModel, Back, Click, Done, Drag, Goto, Home, Key,
    LongPress, Move, OpenApp, Python, Scroll, Swipe, Tap, Type, Wait, Zoom,
)
from mintgym.action_spaces.errors import InvalidAction
from mintgym.action_spaces.sets import ANDROID, DESKTOP, DOMAIN_SETS, PYTOOL, WEB, ActionSet, action_set_for

__all__ = [
    "ACTION_ADAPTER", "ACTION_TYPES", "Action", "ActionModel", "ActionSet", "ANDROID", "Back", "Click",
    "DESKTOP", "DOMAIN_SETS", "Done", "Drag", "Goto", "Home", "InvalidAction", "Key", "LongPress", "Move",
    "OpenApp", "PYTOOL", "Python", "Scroll", "Swipe", "Tap", "Type", "WEB", "Wait", "Zoom", "action_set_for",
]
