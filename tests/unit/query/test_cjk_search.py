"""Chinese and Japanese text is found through CJK bigrams, hot and cold, literal and phrase."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import header, user
from tests.unit.query.kit import CWD, T0, Kit


@pytest.mark.parametrize("hot", [10, 0], ids=["hot", "cold"])
def test_cjk_queries_find_their_entries(tmp_path: Path, hot: int) -> None:
    kit = Kit(tmp_path / "k", hotSessions=hot)
    try:
        texts = {
            "ja": "技術スタックを更新しました",
            "zh": "请优化README的结构",
            "ko": "한국어 텍스트 검색",
            "en": "plain stack update",
        }
        for age, (name, text) in enumerate(texts.items()):
            kit.session(name, [header(name, CWD), user("u", None, text, T0)], mtime_s=40 - age)
        kit.build()

        def sessions(query: str, **args: str) -> list[str]:
            page = kit.recall(query=query, scope="project", **args)
            return [h["sessionId"] for h in page["hits"]]

        assert sessions("技術スタック 更新", queryMatch="all") == ["pi:ja"]
        assert sessions("优化 readme", queryMatch="all") == ["pi:zh"]
        assert sessions("텍스트") == ["pi:ko"]
        assert sessions("スタック更新", queryMatch="all") == []  # "ク更" is not in the text
        phrase = kit.recall(query="スタックを更新", queryMode="phrase", scope="project")
        assert [h["sessionId"] for h in phrase["hits"]] == ["pi:ja"]
    finally:
        kit.close()
