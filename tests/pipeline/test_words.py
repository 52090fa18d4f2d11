"""The word of every script (corpusforge.pipeline.words) and its uses: dedup's shingles and counts, the quality
tokenizer's tokens. Each script's rule is pinned here (issue 40)."""
from __future__ import annotations

import pytest

from corpusforge.pipeline import words
from corpusforge.pipeline.dedup import text as dedup_text
from corpusforge.pipeline.quality.text import TextView

# (script, text, its words): space-delimited scripts keep their words; scripts without spaces count by characters,
# a character keeping its combining marks.
WORD_RULES = [
    ("Latin", "Die Stadtbibliothek öffnet wieder", ["Die", "Stadtbibliothek", "öffnet", "wieder"]),
    ("Cyrillic", "Библиотека снова открыта", ["Библиотека", "снова", "открыта"]),
    ("Arabic", "المكتبة مفتوحة", ["المكتبة", "مفتوحة"]),
    ("Hangul", "도서관이 다시 열렸다", ["도서관이", "다시", "열렸다"]),
    ("Devanagari", "पुस्तकालय खुला है", ["पुस्तकालय", "खुला", "है"]),
    ("Han", "图书馆开放", ["图", "书", "馆", "开", "放"]),
    ("Hiragana and Katakana", "ファイルを開く", ["フ", "ァ", "イ", "ル", "を", "開", "く"]),
    ("kana voicing mark", "か\u3099", ["か\u3099"]),
    ("Thai", "กินข้าว", ["กิ", "น", "ข้", "า", "ว"]),
    ("Lao", "ພາສາລາວ", ["ພ", "າ", "ສ", "າ", "ລ", "າ", "ວ"]),
    ("Khmer", "ភាសា", ["ភា", "សា"]),
    ("Myanmar", "မြန်မာ", ["မြ", "န်", "မာ"]),
    ("Tibetan", "བོད", ["བོ", "ད"]),
    ("mixed, span by span", "GPU加速 Python3のコード", ["GPU", "加", "速", "Python3", "の", "コ", "ー", "ド"]),
]


@pytest.mark.parametrize("script,text,expected", WORD_RULES, ids=[r[0] for r in WORD_RULES])
def test_each_script_word_rule(script, text, expected):
    assert words.words(text) == expected
    assert words.spaced(text).split() == expected


# (script, text, words it counts for): a space-delimited word counts one; a Han character 3.3 / 6.45 of an English
# word, a kana 1.45 / 6.45, a Thai (Lao, Khmer, Myanmar...) character 1.35 / 6.45, their sum rounded up.
COUNT_RULES = [
    ("Latin", "Die Stadtbibliothek öffnet wieder", 4),
    ("Cyrillic", "Библиотека снова открыта", 3),
    ("Hangul", "도서관이 다시 열렸다", 3),
    ("Han: 10 characters, 5.1 words", "图书馆开放图书馆开放", 6),
    ("Han: 2 characters", "图书", 2),
    ("kana: 10 characters, 2.2 words", "ひらがなとカタカナだ", 3),
    ("Thai: 11 characters, 2.3 words", "ภาษาไทยภาษา", 3),
    ("one kana is one word", "を", 1),
    ("mixed", "GPU加速 Python3のコード", 2 + 2),
]


@pytest.mark.parametrize("script,text,expected", COUNT_RULES, ids=[r[0] for r in COUNT_RULES])
def test_each_script_word_count(script, text, expected):
    assert words.count_spaced(" ".join(words.words(text))) == expected
    assert words.word_count(words.words(text)) == expected
    assert words.word_count(words.words(text), text) == expected


def test_ascii_and_space_delimited_text_is_left_as_it_is():
    for text in ("plain ASCII words", "Grüße aus Köln — “quoted”", "Привет мир"):
        assert not words.has_no_space_script(text)
        assert words.spaced(text) is text


@pytest.mark.parametrize("script,text,expected", WORD_RULES, ids=[r[0] for r in WORD_RULES])
def test_dedup_words_and_counts_follow_the_rule(script, text, expected):
    # dedup's words are normalised (lower case, punctuation and combining marks removed: its own rule, unchanged),
    # then split by the script rule.
    normalized = dedup_text.normalized_bytes(text).decode()
    assert dedup_text.words(text) == words.words(normalized)
    assert dedup_text.count_words(dedup_text.normalized_bytes(text)) == words.word_count(words.words(normalized))


SHINGLE_RULES = [
    ("Latin", "one two three four five six", ["one two three four five", "two three four five six"]),
    ("Han", "一二三四五六", ["一 二 三 四 五", "二 三 四 五 六"]),
    ("Thai", "กขคงจฉ", ["ก ข ค ง จ", "ข ค ง จ ฉ"]),
    ("Japanese", "東京タワーへ", ["東 京 タ ワ ー", "京 タ ワ ー へ"]),
    ("mixed", "Linux 内核版本", ["linux 内 核 版 本"]),
]


@pytest.mark.parametrize("script,text,expected", SHINGLE_RULES, ids=[r[0] for r in SHINGLE_RULES])
def test_each_script_shingle_rule(script, text, expected):
    assert dedup_text.shingles(text, 5, "word") == expected
    from corpusforge.pipeline.dedup.minhash import Shingler

    # the fast shingle hashes see the same words as the datasketch-compatible shingle bytes
    shingler = Shingler(5, "word", "fast")
    assert [shingler.hashfunc(s) for s in shingler.shingle_bytes(text)] == shingler.hashes([text])[0].tolist()
    assert [s.decode() for s in shingler.shingle_bytes(text)] == expected


def test_quality_tokens_split_no_space_scripts_by_character():
    view = TextView("图书馆开放了。 Python的版本 กินข้าว hello")
    assert view.content_words == ["图", "书", "馆", "开", "放", "了", "Python", "的", "版", "本",
                                  "กิ", "น", "ข้", "า", "ว", "hello"]
    assert view.n_sentences == 2
    assert TextView("plain English, as before.").content_words == ["plain", "English", "as", "before"]


def test_near_duplicates_in_chinese_are_found_at_the_defaults():
    """Two Chinese documents that differ in a few characters share most word 5-shingles now; with whitespace words
    each clause was one word and they shared almost none."""
    from corpusforge.pipeline.dedup.config import NearDedupConfig
    from corpusforge.pipeline.dedup.minhash import MinHasher, Shingler, estimated_jaccard

    a = ("图书馆在经过两年的装修之后于春天重新开放，新的阅览室可以容纳两百名读者，"
         "儿童区也增加了许多新书。开放时间为每天上午九点到晚上八点，周一闭馆。")
    b = a.replace("两百", "三百").replace("九点", "十点")
    cfg = NearDedupConfig()
    hasher = MinHasher(cfg.num_perm, cfg.seed, Shingler(cfg.ngram, cfg.unit, cfg.hash))
    sigs = hasher.signatures([a, b])
    assert estimated_jaccard(sigs[0], sigs[1]) >= cfg.verify_threshold


# A short Chinese article, one sentence a line (each under 30 characters, as long as ~60 in English), and a Thai
# one, whose sentences end without punctuation: good text that whitespace words dropped (fineweb_short_line_ratio,
# fineweb_line_punct_ratio).
CHINESE_ARTICLE = "\n".join([
    "图书馆经过两年的装修，今年春天重新开放。", "新的阅览室可以容纳两百名读者，环境安静。",
    "儿童区增加了许多新书，还有专门的故事时间。", "开放时间为每天上午九点到晚上八点，周一闭馆。",
    "市民可以凭身份证免费办理借书证并借阅图书。",
])
THAI_ARTICLE = "\n".join([
    "ห้องสมุดเมืองเปิดให้บริการอีกครั้งในฤดูใบไม้ผลินี้หลังจากการปรับปรุงนานสองปี",
    "ห้องอ่านหนังสือใหม่รองรับผู้อ่านได้สองร้อยคนและมีบรรยากาศเงียบสงบ",
    "เด็ก ๆ มีมุมหนังสือของตัวเองพร้อมกิจกรรมเล่านิทานทุกสัปดาห์",
    "ห้องสมุดเปิดทุกวันตั้งแต่เก้าโมงเช้าถึงสองทุ่ม ยกเว้นวันจันทร์",
])


@pytest.mark.parametrize("lang,text", [("zh", CHINESE_ARTICLE), ("th", THAI_ARTICLE)])
def test_good_articles_without_spaces_pass_the_default_rules(lang, text):
    from corpusforge.pipeline.quality.config import QualityConfig
    from corpusforge.pipeline.quality.rules import HeuristicRules

    assert HeuristicRules(QualityConfig()).apply(text, lang).reason is None


def test_line_widths_count_characters_for_the_english_they_stand_for():
    from corpusforge.pipeline.quality.text import TextView, mean_word_length

    assert words.text_width("图书馆") == pytest.approx(9.9)  # 3 x 3.3
    assert words.text_width("도서관") == pytest.approx(6.6)  # Hangul: 3 x 2.2
    assert words.text_width("plain, as before") == len("plain, as before")
    # Korean words are 2-3 syllables: as long as English words once a syllable counts 2.2 characters
    assert mean_word_length(TextView("도서관이 다시 열렸다")) == pytest.approx((4 + 2 + 3) * 2.2 / 3)


def test_a_long_chinese_line_is_many_words_not_one_long_word():
    import random

    from corpusforge.pipeline.quality.config import C4Config
    from corpusforge.pipeline.quality.rules import _c4_edit_lines

    rng = random.Random(0)
    line = "".join(rng.choice("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动") + ("。" if i % 20 == 19 else "")
                   for i in range(1200))
    text, counts = _c4_edit_lines(line, C4Config())
    assert "c4_lines_long_word" not in counts and text == line
    assert "c4_lines_long_word" in _c4_edit_lines("x" * 1200, C4Config())[1]  # a long word still goes


def test_ngram_length_follows_the_words_of_the_text():
    han = list("图书馆经过两年的装修今年春天重新开放")  # 18 characters: 10 words
    assert words.ngram_length(5, han, words.word_count(han)) == 9
    english = "the library opens again this spring".split()
    assert words.ngram_length(5, english, words.word_count(english)) == 5
