"""Shared by the pytool session tests: a session on the module's ``host`` fixture, and running one cell."""

import pytest

from mintgym.action_spaces import Python


@pytest.fixture
async def env(host):
    e = await host.create({})
    yield e
    await e.close()


async def run(env, code: str) -> str:
    """What one cell printed (its error included)."""
    await env.execute(Python(code=code))
    return env.last_output
