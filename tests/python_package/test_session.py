"""Sessions from Python: a variable persists, pause/resume, close."""

import pytest

import codeact


async def test_a_session_keeps_its_globals_and_closes():
    p = codeact.LocalCodeActProvider()
    session = await p.create_session(name="notebook")
    first = await session.execute("counter = 1")
    second = await session.execute("counter += 1\ncounter")
    assert (first.session_state, second.session_state) == ("new", "kept")
    assert second.output == 2 and second.session == "notebook"
    # A stateless run does not see it.
    other = await p.execute("print(counter)")
    assert other.outcome == "error" and other.error["type"] == "NameError"
    await session.close()
    assert session.closed
    after = await session.execute("counter")
    assert after.outcome == "setup_error", after


async def test_pause_and_resume_keep_the_state():
    p = codeact.LocalCodeActProvider()
    async with await p.create_session() as session:
        await session.execute("x = 'kept'")
        try:
            await session.pause()
        except codeact.CodeActError as e:
            pytest.skip(f"this host cannot pause a session: {e}")
        assert session.paused
        paused_run = await session.execute("x")
        assert paused_run.outcome == "setup_error" and "paused" in paused_run.message
        await session.resume()
        r = await session.execute("x")
        assert r.outcome == "ok" and r.output == "kept"
