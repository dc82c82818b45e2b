"""Oracles for MiniWoB++ visual and spatial tasks: shapes, drags, drawing, games, numbers and timing.

Each solver reads the page only to decide what to do and acts only through the shared pixel actions.
"""

from __future__ import annotations

from mintgym.environments.web.miniwob.oracles import solver  # noqa: F401
