"""A local pin that differs only where the environment shows through (``$TZ`` in a tool
description) is explained in the words of a local pin: approve it here, never the team
lock's "lock again in a pull request"."""

from __future__ import annotations

from pathlib import Path

from tests.proxy.harness import Proxy, Scripted, proxy_env, tool

DESCRIPTION = "Get current time. Use '{}' as local timezone if none is given."


def test_an_environment_change_of_a_local_pin_gets_local_advice(
    tmp_path: Path, toolpin_home: Path
) -> None:
    server = Scripted(tmp_path / "srv", tools=[tool("now", DESCRIPTION.format("UTC"))])
    first = Proxy(toolpin_home, server.argv, env=proxy_env(toolpin_home, TZ="UTC"))
    first.initialize()
    assert first.close() == 0

    server.update(tools=[tool("now", DESCRIPTION.format("Europe/Paris"))])
    proxy = Proxy(toolpin_home, server.argv, env=proxy_env(toolpin_home, TZ="Europe/Paris"))
    reply = proxy.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert reply["error"]["code"] == -31042
    assert proxy.close() == 1
    err = proxy.stderr
    assert "hint: tool now differs from the pin only where it holds $TZ" in err
    assert "pinned with 'UTC'" in err
    assert "fix: pin the value" in err and "so it starts alike every time" in err
    assert "then start it again" in err
    assert "toolpin approve " in err
    assert "pull request" not in err and "the lock" not in err
