"""The web domain: Playwright-driven Chromium sessions (one context each) and the MiniWoB++ and web-app packs.

Importing this package is cheap; Playwright loads only with :mod:`mintgym.environments.web.host`.
"""
