"""Agent skills pinned like tools: ``toolpin skills pin|check|review|approve``.

A skill is a folder holding ``SKILL.md`` (Claude Code reads them from ``~/.claude/skills``,
a project's ``.claude/skills`` and installed plugins; other agents from ``.agents/skills``).
:mod:`~toolpin.skills.tree` reads one folder (bounded, links never followed out of it),
:mod:`~toolpin.skills.frontmatter` parses ``SKILL.md``, :mod:`~toolpin.skills.locate`
finds the folders, :mod:`~toolpin.skills.store` keeps one pin per skill under
``TOOLPIN_HOME/skills`` and :mod:`~toolpin.skills.diff` explains a change with the tool
label engine (:mod:`toolpin.core.labels`).
"""
