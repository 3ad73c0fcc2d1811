"""How rules read titles and cues (issue 37): a labelled title is a heading and a claim,
opposite verbs contradict, the Chinese cues of seeds/004; on small stores of our own and the
seeds' own examples, never the eval cases."""

from __future__ import annotations

import pytest

from dmm.conflicts.headings import is_heading

from .test_detection import add, detect

TABS, SPACES = "mem_2026_01_05_001", "mem_2026_01_10_001"


def test_the_prds_tabs_and_spaces_pair_is_a_contradiction(repo):
    """seeds/000 5.2 and its CLI example: both titles are "Area: statement"."""
    tags = "[code, style, indentation, formatting]"
    add(repo, "project/code/tabs.md", TABS, "Code Style: Use Tabs for Indentation",
        "Indent every source file with tabs, so that each developer picks the width.",
        tags=tags, priority=0.8)
    add(repo, "project/code/spaces.md", SPACES, "Code Style: Use 4 Spaces for Indentation",
        "Indent every source file with 4 spaces; they render the same in every editor.",
        tags=tags, priority=0.7)
    assert detect(repo) == {(TABS, SPACES): "contradictory"}


@pytest.mark.parametrize("first, second", [
    ("API Design: Use GraphQL for Client Queries",
     "API Design: Use REST Endpoints for Client Queries"),
    ("Python Strings: Use Single Quotes Everywhere",
     "Python Strings: Use Double Quotes Everywhere"),
    ("Persistence Layer: Use PostgreSQL as the Primary Store",
     "Persistence Layer: Use MySQL as the Primary Store"),
])
def test_labelled_title_case_choices_contradict(repo, first, second):
    add(repo, "project/a.md", "mem_2026_03_01_001", first,
        f"{first.split(': ', 1)[1]}. The team agreed on this in the architecture review.")
    add(repo, "project/b.md", "mem_2026_03_02_001", second,
        f"{second.split(': ', 1)[1]}. The team agreed on this in the architecture review.")
    assert detect(repo) == {("mem_2026_03_01_001", "mem_2026_03_02_001"): "contradictory"}


@pytest.mark.parametrize("title, heading", [
    ("Code Style: Use Tabs for Indentation", False),  # a label, then an instruction
    ("Deploys: Never Push on Fridays", False),
    ("Security: Authentication and Authorization", True),  # a label and a topic
    ("ADR010: Use of RDS Aurora Serverless V1 with Postgres", True),  # "use of": a noun
    ("Python: Best Practices for Testing", True),  # a document's name
    ("Vue 3 Development Instructions", True),
    ("Passwords are hashed with bcrypt", False),
])
def test_a_labelled_title_is_a_heading_and_a_claim(title, heading):
    assert is_heading(title) is heading


@pytest.mark.parametrize("yes, no", [
    (("Enable HTTP/2 on the load balancer",
      "Enable HTTP/2 on the public load balancer for all listeners."),
     ("Disable HTTP/2 on the load balancer",
      "Disable HTTP/2 on the public load balancer for all listeners.")),
    (("Allow force pushes to feature branches",
      "Developers may force-push their own feature branches after a rebase."),
     ("Prohibit force pushes to feature branches",
      "Developers may not force-push feature branches, even after a rebase.")),
    (("Allow SVG uploads for avatars", "Users may upload SVG files as avatars."),
     ("Forbid SVG uploads for avatars",
      "SVG files are refused as avatars because they can carry scripts.")),
    (("Turn on debug logging in staging",
      "Staging services log at debug level so that support can trace requests."),
     ("Turn off debug logging in staging",
      "Staging services log at info level; debug output filled the disks.")),
    (("Webhook deliveries are sent synchronously",
      "The API sends each webhook delivery synchronously inside the request."),
     ("Webhook deliveries are sent asynchronously",
      "The API sends each webhook delivery asynchronously from a worker.")),
])
def test_opposite_verbs_contradict_rather_than_duplicate(repo, yes, no):
    add(repo, "project/yes.md", "mem_2026_02_01_001", *yes, tags="[ops]")
    add(repo, "project/no.md", "mem_2026_02_02_001", *no, tags="[ops]")
    assert detect(repo) == {("mem_2026_02_01_001", "mem_2026_02_02_001"): "contradictory"}


def test_opposite_verbs_on_different_things_do_not_contradict(repo):
    add(repo, "project/a.md", "mem_2026_02_01_001", "Enable gzip compression for JSON responses",
        "The API gateway compresses JSON responses with gzip.", tags="[http]")
    add(repo, "project/b.md", "mem_2026_02_02_001", "Disable compression for image uploads",
        "Image uploads are stored as sent: JPEG and PNG are compressed already.", tags="[http]")
    assert "contradictory" not in detect(repo).values()


@pytest.mark.parametrize("old, new", [
    # seeds/004's own examples: a replacement ("X 替代 Y") and a negation ("不用 X，改用 Y")
    (("默认用 React 开发前端", "前端页面默认用 React 开发，组件放在 src/components。"),
     ("决定用 Vue 替代 React", "前端决定用 Vue 替代 React，新页面都用 Vue 写。")),
    (("用 cargo install 安装", "命令行工具用 cargo install 安装到本机。"),
     ("不用 cargo install，改用 brew", "命令行工具不用 cargo install 安装，改用 brew。")),
    # other forms of the same cues: stop doing, replaced by (passive), deprecated
    (("日期处理使用 Moment.js", "所有日期格式化和时区换算都使用 Moment.js。"),
     ("停止使用 Moment.js", "新代码停止使用 Moment.js，日期处理交给 date-fns。")),
    (("消息队列使用 RabbitMQ", "服务之间的异步消息都经过 RabbitMQ 投递。"),
     ("RabbitMQ 已被 Kafka 取代", "服务之间的异步消息现在经过 Kafka，RabbitMQ 已被 Kafka 取代。")),
])
def test_the_chinese_cues_of_seed_004(repo, old, new):
    add(repo, "project/old.md", "mem_2026_01_01_001", *old, tags="[frontend]")
    add(repo, "project/new.md", "mem_2026_04_01_001", *new, tags="[frontend]")
    assert ("mem_2026_01_01_001", "mem_2026_04_01_001") in detect(repo)


def test_a_chinese_replacement_of_something_else_is_no_conflict(repo):
    add(repo, "project/old.md", "mem_2026_01_01_001", "默认用 React 开发前端",
        "前端页面默认用 React 开发，组件放在 src/components。", tags="[frontend]")
    add(repo, "project/new.md", "mem_2026_04_01_001", "决定用 pnpm 替代 npm",
        "安装依赖决定用 pnpm 替代 npm，锁文件改为 pnpm-lock.yaml。", tags="[frontend]")
    assert detect(repo) == {}


def _evidence(repo) -> list[tuple[str, str]]:
    from dmm import config
    from dmm.conflicts.scanner import scan
    from dmm.index.refresh import open_fresh

    conn, _ = open_fresh(repo.ws)
    try:
        scan(conn, config.DEFAULTS["conflicts"])
        return conn.execute("SELECT type, evidence FROM conflicts").fetchall()
    finally:
        conn.close()


def test_the_evidence_names_the_claims_values_not_the_rationales(repo):
    """Issue 37 item 11: pool size 20 against 50 was reported as '20 connections' vs '200
    connections', a number from the second memory's "Why" sentence."""
    add(repo, "project/pool20.md", "mem_2026_01_01_001", "Database connection pool size is 20",
        "Each API instance keeps a pool of 20 connections to Postgres.\n\n"
        "Why: the server accepts 100 connections and we run four instances.", tags="[database]")
    add(repo, "project/pool50.md", "mem_2026_03_01_001", "Database connection pool size is 50",
        "Each API instance sets its pool size to 50.\n\n"
        "Why: after the upgrade the server accepts 200 connections, and we still run four "
        "instances.", tags="[database]")
    found = _evidence(repo)
    assert [t for t, _ in found] == ["contradictory"]
    evidence = found[0][1]
    assert "20" in evidence and "50" in evidence, evidence
    assert "200" not in evidence and "100" not in evidence, evidence


def test_values_in_a_because_sentence_are_no_claim(repo):
    """The second memory's only duration is its reason, not its rule: no value differs."""
    add(repo, "project/a.md", "mem_2026_01_01_001", "Search requests time out after 5 seconds",
        "The search proxy cancels a search request after 5 seconds.", tags="[search]")
    add(repo, "project/b.md", "mem_2026_02_01_001", "Search requests are retried once",
        "The search proxy retries a failed search request once. Because users leave after "
        "10 seconds, a second retry would come too late.", tags="[search]")
    assert all(t != "contradictory" for t, _ in _evidence(repo))


@pytest.mark.parametrize("title, directive", [
    ("默认用 React 开发前端", True), ("用 cargo install 安装", True), ("必须使用 UTC 时间", True),
    ("用户数据保存 30 天", False),  # 用户: the user, not "use"
    ("用于测试的数据库", False), ("使用说明", False),
])
def test_chinese_directives(title, directive):
    from dmm.conflicts.cues import DIRECTIVE

    assert bool(DIRECTIVE.search(title)) is directive


@pytest.mark.parametrize("title, said", [
    ("Database connection pool size is 20", ["size is 20"]),
    ("Max workers: 8", ["workers: 8"]),
    ("A pool size of 20", ["size of 20"]),
    ("Page size is capped at 200", []),  # a verb's bound, not a noun's value
    ("Timeout was raised to 30", []),
    ("Python version is 3.12", []),  # versions are compared as versions
    ("Released on May 20", []),  # a date
    ("Limit is 5 per user", []),  # the number does not end its clause
])
def test_a_title_sets_a_bare_value_of_its_noun(title, said):
    from dmm.conflicts.quantities import settings

    assert [q.text for q in settings(title)] == said
