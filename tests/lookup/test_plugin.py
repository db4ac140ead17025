"""The Claude Code plugin: validated by the real ``claude`` CLI (offline), versions pinned
the same everywhere, the skill within the Agent Skills limits (also copied into
``.agents/skills/``), and the always-on context cost."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import toolpin
from tests.shared import npm_install

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "toolpin"
SKILL = PLUGIN / "skills" / "toolpin" / "SKILL.md"
CLAUDE_PREFIX = REPO / ".cache" / "claude-code"
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_VERSION = "2.1.332"


@pytest.fixture(scope="session")
def claude() -> Path:
    """The ``claude`` CLI from npm, installed once into ``<repo>/.cache/claude-code``."""
    failed = npm_install(CLAUDE_PREFIX, CLAUDE_PACKAGE, CLAUDE_VERSION)
    if failed:
        pytest.fail(failed)
    return CLAUDE_PREFIX / "node_modules" / ".bin" / "claude"


def run_claude(claude: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "claude-home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [str(claude), *args], capture_output=True, text=True, timeout=120, env=env, cwd=REPO
    )


@pytest.mark.npm
def test_plugin_validates_strict_and_for_the_directory(claude: Path, tmp_path: Path) -> None:
    done = run_claude(
        claude, tmp_path, "plugin", "validate", "--strict", "--profile", "directory", str(PLUGIN)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout
    assert "skills: toolpin:toolpin" in done.stdout
    assert "SessionStart startup|resume|clear|compact" in done.stdout


@pytest.mark.npm
def test_marketplace_validates_strict(claude: Path, tmp_path: Path) -> None:
    done = run_claude(claude, tmp_path, "plugin", "validate", "--strict", str(REPO))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "marketplace.json" in done.stdout and "Validation passed" in done.stdout


@pytest.mark.npm
def test_the_skill_works_copied_into_agents_skills(claude: Path, tmp_path: Path) -> None:
    skills = tmp_path / "project" / ".agents" / "skills"
    shutil.copytree(SKILL.parent, skills / "toolpin")
    done = run_claude(claude, tmp_path, "plugin", "validate", "--strict", str(skills))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout
    assert_agent_skill(skills / "toolpin" / "SKILL.md")


@pytest.mark.npm
def test_always_on_cost_is_small(claude: Path, tmp_path: Path) -> None:
    done = run_claude(claude, tmp_path, "--plugin-dir", str(PLUGIN), "plugin", "details", "toolpin")
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"Always-on:\s+~(\d+) tok", done.stdout)
    assert found is not None, done.stdout
    assert int(found.group(1)) <= 150


def _frontmatter(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    block = text[4 : text.index("\n---\n", 4)]
    fields = {}
    for line in block.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def assert_agent_skill(path: Path) -> None:
    """The Agent Skills specification's limits."""
    fields = _frontmatter(path)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", fields["name"])
    assert len(fields["name"]) <= 64 and fields["name"] == path.parent.name
    assert 1 <= len(fields["description"]) <= 1024
    assert len(fields.get("compatibility", "")) <= 500


def test_the_skill_follows_the_agent_skills_limits() -> None:
    assert_agent_skill(SKILL)


def test_the_skill_never_approves() -> None:
    text = SKILL.read_text(encoding="utf-8")
    assert "Never run `toolpin approve`" in text
    assert "Never repeat" in text
    # The only approve command it names is the one it forbids.
    assert [m.start() for m in re.finditer("toolpin approve", text)] == [
        text.index("toolpin approve")
    ]


def test_versions_are_pinned_the_same_everywhere() -> None:
    version = toolpin.__version__
    plugin = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    mcp = json.loads((PLUGIN / ".mcp.json").read_text(encoding="utf-8"))
    assert plugin["version"] == version
    (entry,) = market["plugins"]
    assert entry["version"] == version and entry["source"] == "./plugins/toolpin"
    # toolpin is not on a package index yet: the plugin runs the installed command
    assert mcp["mcpServers"]["toolpin"] == {"command": "toolpin", "args": ["lookup"]}
    for text in (
        SKILL.read_text(encoding="utf-8"),
        (PLUGIN / "README.md").read_text(encoding="utf-8"),
    ):
        pins = set(re.findall(r"toolpin@([0-9][^\s`)]*)", text))
        assert pins <= {version}, pins


def test_the_hook_is_declared_as_required() -> None:
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    (group,) = hooks["hooks"]["SessionStart"]
    assert group["matcher"] == "startup|resume|clear|compact"
    (hook,) = group["hooks"]
    assert hook["type"] == "command" and hook["timeout"] <= 5
    assert "${CLAUDE_PLUGIN_ROOT}/hooks/unprotected_servers.py" in hook["command"]


def test_the_icon_is_a_square_png_in_range() -> None:
    data = (PLUGIN / ".claude-plugin" / "icon.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width == height and 512 <= width <= 2048
