"""Differential cases for the OSWorld metrics MintGym exposes beyond those the bundled 60 tasks name.

Same rules as :mod:`.metric_cases`: at least five cases each, on real files, compared with desktop-env.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.environments.desktop.osworld.cases.metric_inputs import OOR, Case, Files


def _general_more(f: Files) -> list[Case]:
    fm = "fuzzy_match"
    cases = [
        Case(fm, "equal", ("New York", {"expected": "New York"})),
        Case(fm, "close", ("New Yrok", {"expected": "New York"})),
        Case(fm, "case", ("new york", {"expected": "New York"})), Case(fm, "None", (None, {"expected": "x"})),
        Case(fm, "empty", ("", {"expected": ""})),
    ]
    lst = f.text("list.txt", "apple 3\nbanana 5\ncherry\n")
    cl = "check_list"
    cases += [
        Case(cl, "all patterns", (lst, {"expect": [r"^apple \d", "cherry"]})),
        Case(cl, "pattern absent", (lst, {"expect": ["durian"]})),
        Case(cl, "unexpected present", (lst, {"unexpect": ["ban+ana"]})),
        Case(cl, "None", (None, {"expect": []})), Case(cl, "missing file", (f.missing, {"expect": []})),
        Case(cl, "case", (lst, {"expect": ["APPLE"]})),
    ]
    dj = "check_direct_json_object"
    cases += [
        Case(dj, "equal object", ({"a": 1, "b": "x"}, {"expected": {"a": 1, "b": "x"}})),
        Case(dj, "single-quoted text", ("  {'a': 1}  ", {"expected": {"a": 1}})),
        Case(dj, "value differs", ({"a": 2}, {"expected": {"a": 1}})),
        Case(dj, "ignore_list_order", ({"a": [2, 1]}, {"expected": {"a": [1, 2], "ignore_list_order": True}})),
        Case(dj, "expect_in_result", ({"title": "The Big Sleep", "tags": ["x", "y"]},
                                      {"expected": {"title": "Big", "tags": ["y"]}, "expect_in_result": True})),
        Case(dj, "None", (None, {"expected": {"a": 1}})), Case(dj, "not JSON", ("{oops", {"expected": {"a": 1}})),
        Case(dj, "evaluation failed marker", ({"a": 1}, {"expected": {"a": "__EVALUATION_FAILED__"}})),
    ]
    gold = f.json("gold.json", {"a": 1, "b": [1, 2]})
    ij = "is_included_all_json_objects"
    cases += [
        Case(ij, "superset", (gold, f.json("res1.json", {"a": 1, "b": [1, 2], "c": 3}))),
        Case(ij, "value differs", (gold, f.json("res2.json", {"a": 2, "b": [1, 2]}))),
        Case(ij, "None", (gold, None)), Case(ij, "missing file", (gold, f.missing)),
        Case(ij, "not JSON", (gold, f.text("res3.json", "{"))),
    ]
    out = f.text("term.txt", "total 4\nfile.txt\n")
    ct = "compare_terminal_and_txt"
    cases += [
        Case(ct, "same text", (out, "total 4\nfile.txt\n")), Case(ct, "missing newline", (out, "total 4\nfile.txt")),
        Case(ct, "None output", (out, None)), Case(ct, "missing file", (f.missing, "x")),
        Case(ct, "other text", (out, "total 5\n")),
    ]
    py = f.text("gold.py", "def f(x):\n    return x + 1\n")
    pp = "compare_python_pure_text"
    cases += [
        Case(pp, "identical", (f.text("u1.py", "def f(x):\n    return x + 1\n"), py)),
        Case(pp, "shebang, tabs, blank lines",
             (f.text("u2.py", "#!/usr/bin/env python\ndef f(x):\n\n\treturn x + 1  \n"), py)),
        Case(pp, "different code", (f.text("u3.py", "def f(x):\n    return x - 1\n"), py)),
        Case(pp, "None", (None, py)), Case(pp, "missing file", (f.missing, py)),
        Case(pp, "latin-1 file", (f.text("u4.py", "# caf\xe9\ndef f(x):\n    return x + 1\n", "latin-1"), py)),
    ]
    return cases


def _chrome_more(f: Files) -> list[Case]:
    up = "is_expected_url_pattern_match"
    cases = [
        Case(up, "all patterns", ("https://www.example.com/search?q=cats", {"expected": ["example\\.com", "q=cats"]})),
        Case(up, "one pattern fails", ({"url": "https://www.example.com/"}, {"expected": ["example", "q="]})),
        Case(up, "None", (None, {"expected": ["x"]})), Case(up, "not a URL holder", (["x"], {"expected": ["x"]})),
        Case(up, "case", ("https://EXAMPLE.com", {"expected": ["example"]})),
    ]
    tabs = [{"url": "https://www.example.com/"}, {"url": "https://docs.python.org/3/"}]
    et = "is_expected_tabs"
    cases += [
        Case(et, "same tabs", (tabs, {"type": "url",
                                      "urls": ["https://www.example.com/", "https://docs.python.org/3/"]})),
        Case(et, "one tab differs", (tabs, {"type": "url", "urls": ["https://www.example.com/", "https://pypi.org/"]})),
        Case(et, "None", (None, {"type": "url", "urls": []})), Case(et, "unknown type", (tabs, {"type": "title"})),
        Case(et, "trailing slash", ([{"url": "https://www.example.com"}],
                                    {"type": "url", "urls": ["https://www.example.com/"]})),
    ]
    marks = {"bookmark_bar": {"children": [
        {"type": "folder", "name": "Liked Authors", "children": [{"type": "url", "url": "https://a.example/"},
                                                                 {"type": "url", "url": "https://b.example/"}]},
        {"type": "url", "name": "News", "url": "https://news.example/"}]}}
    eb = "is_expected_bookmarks"
    cases += [
        Case(eb, "folder names", (marks, {"type": "bookmark_bar_folders_names", "names": ["Liked Authors"]})),
        Case(eb, "website urls differ",
             (marks, {"type": "bookmark_bar_websites_urls", "urls": ["https://x.example/"]})),
        Case(eb, "liked authors, alternatives", (marks, {"type": "liked_authors_websites_urls",
                                                        "urls": [["https://a.example/", "https://c.example/"],
                                                                 "https://b.example/"]})),
        Case(eb, "None", (None, {"type": "bookmark_bar_folders_names", "names": []})),
        Case(eb, "unknown type", (marks, {"type": "other"})),
    ]
    sq = "is_expected_search_query"
    cases += [
        Case(sq, "pattern found", ({"url": "https://www.google.com/search?q=weather"},
                                   {"expect": {"pattern": "q=weather"}})),
        Case(sq, "pattern absent", ({"url": "https://www.google.com/"}, {"expect": {"pattern": "q="}})),
        Case(sq, "None", (None, {"expect": {"pattern": "x"}})),
        Case(sq, "no url", ({"title": "x"}, {"expect": {"pattern": "x"}})),
        Case(sq, "case", ({"url": "https://x/?q=Weather"}, {"expect": {"pattern": "weather"}})),
    ]
    history = [("https://www.amazon.com/cart", "Cart", 3), ("https://news.example/", "News", 1)]
    hd = "check_history_deleted"
    cases += [
        Case(hd, "still there", (history, {"type": "keywords", "keywords": ["amazon"]})),
        Case(hd, "deleted", (history, {"type": "keywords", "keywords": ["ebay"]})),
        Case(hd, "empty history", ([], {"type": "keywords", "keywords": ["amazon"]})),
        Case(hd, "None", (None, {"type": "keywords", "keywords": ["a"]})),
        Case(hd, "unknown type", (history, {"type": "x"})),
        Case(hd, "case", (history, {"type": "keywords", "keywords": ["Amazon"]})),
    ]
    ee = "check_enabled_experiments"
    cases += [
        Case(ee, "same names", (["smooth-scrolling@1", "dark-mode@2"],
                                {"type": "names", "names": ["smooth-scrolling", "dark-mode"]})),
        Case(ee, "other order", (["dark-mode@2", "smooth-scrolling@1"],
                                 {"type": "names", "names": ["smooth-scrolling", "dark-mode"]})),
        Case(ee, "none enabled", ([], {"type": "names", "names": []})),
        Case(ee, "None", (None, {"type": "names", "names": []})),
        Case(ee, "unknown type", (["a@1"], {"type": "x"})),
    ]
    return cases


def _os_more(f: Files) -> list[Case]:
    def timedatectl(zone: str) -> str:
        return ("               Local time: Thu 2024-01-25 12:56:06 WET\n"
                "           Universal time: Thu 2024-01-25 12:56:06 UTC\n"
                "                 RTC time: Thu 2024-01-25 12:56:05\n"
                f"                Time zone: {zone}\n"
                "System clock synchronized: yes\n")

    uz = "is_utc_0"
    cases = [
        Case(uz, "UTC+0", (timedatectl("Atlantic/Faroe (WET, +0000)"),)),
        Case(uz, "UTC+1", (timedatectl("Europe/Paris (CET, +0100)"),)),
        Case(uz, "trailing space", (timedatectl("Etc/UTC (UTC, +0000) "),)),
        Case(uz, "too few lines", ("Local time: x\n",)), Case(uz, "None", (None,)),
    ]
    te = "check_text_enlarged"
    cases += [Case(te, "1.5", ("1.5",)), Case(te, "1.0", ("1.0\n",)), Case(te, "0.75", (" 0.75 ",)),
              Case(te, "not a number", ("big",)), Case(te, "None", (None,))]
    listing = {"children": [{"name": "a.jpg"}, {"name": "b.jpg"}]}
    mj = "check_moved_jpgs"
    cases += [
        Case(mj, "same files", (listing, {"expected": ["b.jpg", "a.jpg"]})),
        Case(mj, "one missing", (listing, {"expected": ["a.jpg", "c.jpg"]})),
        Case(mj, "count differs", (listing, {"expected": ["a.jpg"]})),
        Case(mj, "empty folder", ({"children": []}, {"expected": []})), Case(mj, "None", (None, {"expected": []})),
    ]
    fs = "is_vlc_fullscreen"
    screen = {"width": 1920, "height": 1080}
    cases += [
        Case(fs, "full screen", ({"width": 1920, "height": 1080}, screen)),
        Case(fs, "windowed", ({"width": 1280, "height": 720}, screen)), Case(fs, "None window", (None, screen)),
        Case(fs, "None screen", ({"width": 1, "height": 1}, None)),
        Case(fs, "size as text", ({"width": "1920", "height": "1080"}, screen)),
    ]
    ca = "compare_answer"
    cases += [
        Case(ca, "equal", ("42", {"expected": "42"})), Case(ca, "different", ("41", {"expected": "42"})),
        Case(ca, "None", (None, {"expected": "42"})), Case(ca, "whitespace", ("42\n", {"expected": "42"})),
        Case(ca, "empty", ("", {"expected": ""})),
    ]
    return cases


def _vlc_more(f: Files) -> list[Case]:
    cases = []
    settings = [("check_qt_bgcone", "qt-bgcone", "expected_qt_bgcone", "0", "1"),
                ("check_qt_max_volume", "qt-max-volume", "expected_qt_max_volume", "200", "125"),
                ("check_qt_minimal_view", "qt-minimal-view", "expected_qt_minimal_view", "1", "0")]
    for name, key, field_, value, default in settings:
        cases += [
            Case(name, "set", (f.text(f"{key}-1", f"[qt]\n{key}={value}\n"), {field_: value})),
            Case(name, "default", (f.text(f"{key}-2", "[qt]\n"), {field_: int(default)})),
            Case(name, "set, other value expected", (f.text(f"{key}-3", f"[qt]\n{key}={value}\n"), {field_: default})),
            Case(name, "commented line counts", (f.text(f"{key}-4", f"#{key}={value}\n"), {field_: int(value)})),
            Case(name, "missing file", (f.missing, {field_: value})),
        ]
    gk = "check_global_key_play_pause"
    field_ = "expected_global_key_play_pause"
    cases += [
        Case(gk, "bound", (f.text("gk1", "global-key-play-pause=Ctrl+Space\n"), {field_: 1})),
        Case(gk, "empty binding", (f.text("gk2", "#global-key-play-pause=\n"), {field_: 0})),
        Case(gk, "absent", (f.text("gk3", "[hotkeys]\n"), {field_: "1"})),
        Case(gk, "bound, 0 expected", (f.text("gk4", "global-key-play-pause=p\n"), {field_: 0})),
        Case(gk, "missing file", (f.missing, {field_: 0})),
    ]
    return cases


def _images_more(f: Files) -> list[Case]:
    img = f.png("m_img.png")
    ci = "compare_images"
    cases = [
        Case(ci, "identical", (img, f.png("m_same.png"))), Case(ci, "flipped", (img, f.png("m_flip.png", flip=True))),
        Case(ci, "base score", (img, f.png("m_dark.png", shade=0.8)), {"reference_base_result": 0.5}),
        Case(ci, "below base score", (img, f.png("m_flip2.png", flip=True)), {"reference_base_result": 0.9}),
        Case(ci, "None", (None, img)), Case(ci, "missing file", (img, f.missing)),
        Case(ci, "other size", (f.png("m_big.png", size=96), img)),
    ]
    sz = "check_image_size"
    cases += [
        Case(sz, "width and height", (img, {"width": 48, "height": 48})), Case(sz, "width only", (img, {"width": 48})),
        Case(sz, "wrong height", (img, {"height": 50})), Case(sz, "None", (None, {"width": 1})),
        Case(sz, "missing file", (f.missing, {"width": 1})),
        Case(sz, "ignore_transparent on RGB", (img, {"width": 48, "ignore_transparent": True})),
    ]
    from PIL import Image

    Image.open(img).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(f.root / "m_mirror.png")
    mirror = f.path("m_mirror.png")
    im = "check_image_mirror"
    cases += [
        Case(im, "mirrored", (img, mirror)), Case(im, "not mirrored", (img, img)),
        Case(im, "flipped vertically", (img, f.png("m_vflip.png", flip=True))), Case(im, "None", (img, None)),
        Case(im, "missing file", (f.missing, img)),
    ]
    ss = "check_structure_sim"
    cases += [
        Case(ss, "identical", (img, f.png("m_same2.png"))), Case(ss, "darker", (img, f.png("m_dark2.png", shade=0.7))),
        Case(ss, "flipped", (img, mirror)), Case(ss, "other size", (img, f.png("m_big2.png", size=96))),
        Case(ss, "None", (None, img)), Case(ss, "missing file", (f.missing, img)),
    ]
    three = f.pdf("m_three.pdf", ["a", "b", "c"])
    pg = "check_pdf_pages"
    cases += [
        Case(pg, "eq", (three, {"relation": "eq", "ref_value": 3})),
        Case(pg, "lt fails", (three, {"relation": "lt", "ref_value": 3})),
        Case(pg, "ge", (three, {"relation": "ge", "ref_value": 2})),
        Case(pg, "None", (None, {"relation": "eq", "ref_value": 0})),
        Case(pg, "missing file", (f.missing, {"relation": "eq", "ref_value": 1})),
        Case(pg, "not a PDF", (f.text("m_bad.pdf", "hello"), {"relation": "eq", "ref_value": 1})),
    ]
    return cases


def _docs_more(f: Files) -> list[Case]:
    from docx.enum.text import WD_BREAK, WD_PARAGRAPH_ALIGNMENT
    from docx.shared import Pt

    def table(rows: list[list[str]]) -> Callable[[Any], None]:
        def build(doc: Any) -> None:
            grid = doc.add_table(rows=len(rows), cols=len(rows[0]))
            for i, row in enumerate(rows):
                for j, text in enumerate(row):
                    grid.cell(i, j).text = text
        return build

    def runs(*parts: tuple[str, dict], align: Any = None, footer: str | None = None,
             page_break: bool = False) -> Callable[[Any], None]:
        def build(doc: Any) -> None:
            para = doc.add_paragraph()
            if align is not None:
                para.paragraph_format.alignment = align
            for text, fmt in parts:
                run = para.add_run(text)
                for key, value in fmt.items():
                    if key == "size":
                        run.font.size = Pt(value)
                    else:
                        setattr(run.font, key, value)
            if page_break:
                para.add_run().add_break(WD_BREAK.PAGE)
                doc.add_paragraph("after the break")
            if footer is not None:
                doc.sections[0].footer.paragraphs[0].text = footer
        return build

    base = f.docx_with("dt1.docx", table([["a", "b"], ["1", "2"]]))
    dt = "compare_docx_tables"
    cases = [
        Case(dt, "same table", (base, f.docx_with("dt2.docx", table([["a", "b"], [" 1 ", "2"]])))),
        Case(dt, "cell differs", (base, f.docx_with("dt3.docx", table([["a", "b"], ["1", "3"]])))),
        Case(dt, "shape differs", (base, f.docx_with("dt4.docx", table([["a", "b", "c"], ["1", "2", "3"]])))),
        Case(dt, "no table", (base, f.docx("dt5.docx", ["a"]))), Case(dt, "None", (None, base)),
        Case(dt, "missing file", (f.missing, base)),
    ]
    arial = f.docx_with("fn1.docx", runs(("Hello ", {"name": "Arial"}), ("world", {"name": "Arial"})))
    fn = "compare_font_names"
    cases += [
        Case(fn, "all Arial", (arial, {"font_name": "Arial"})),
        Case(fn, "other font", (arial, {"font_name": "Times New Roman"})),
        Case(fn, "one run differs", (f.docx_with("fn2.docx",
                                                 runs(("a", {"name": "Arial"}), ("b", {"name": "Courier"}))),
                                     {"font_name": "Arial"})),
        Case(fn, "case", (arial, {"font_name": "arial"})), Case(fn, "None", (None, {"font_name": "Arial"})),
        Case(fn, "missing file", (f.missing, {"font_name": "Arial"})),
    ]
    centered = f.docx_with("c1.docx", runs(("Title", {}), align=WD_PARAGRAPH_ALIGNMENT.CENTER))
    fc = "is_first_line_centered"
    cases += [
        Case(fc, "centered", (centered,)), Case(fc, "left", (f.docx("c2.docx", ["Title"]),)),
        Case(fc, "right", (f.docx_with("c3.docx", runs(("Title", {}), align=WD_PARAGRAPH_ALIGNMENT.RIGHT)),)),
        Case(fc, "None", (None,)), Case(fc, "missing file", (f.missing,)),
    ]
    broken = f.docx_with("pb1.docx", runs(("before", {}), page_break=True))
    pb = "contains_page_break"
    cases += [
        Case(pb, "one break", (broken, {})), Case(pb, "count matches", (broken, {"page_break_count": 1})),
        Case(pb, "count differs", (broken, {"page_break_count": 2})),
        Case(pb, "no break", (f.docx("pb2.docx", ["a"]), {})),
        Case(pb, "None", (None, {})), Case(pb, "missing file", (f.missing, {})),
    ]
    lines = f.docx("nl1.docx", ["one two", "", "three"])
    nl = "compare_docx_files_and_ignore_new_lines"
    cases += [
        Case(nl, "same words, other breaks", (lines, f.docx("nl2.docx", ["one", "two three"]))),
        Case(nl, "different words", (lines, f.docx("nl3.docx", ["one two four"]))),
        Case(nl, "ignore_blanks off", (lines, f.docx("nl4.docx", ["one two", "three"])), {"ignore_blanks": False}),
        Case(nl, "not docx", (f.text("nl5.txt", "one two three"), lines)), Case(nl, "None", (None, lines)),
        Case(nl, "missing file", (f.missing + ".docx", lines)),
    ]
    il = "compare_init_lines"
    cases += [
        Case(il, "same start", (lines, f.docx("il1.docx", ["one two", "", "three", "extra"]))),
        Case(il, "differs", (lines, f.docx("il2.docx", ["one  two"]))), Case(il, "None", (lines, None)),
        Case(il, "missing file", (f.missing, lines)), Case(il, "empty document", (f.docx("il3.docx", []), lines)),
    ]
    dl = "compare_docx_lines"
    cases += [
        Case(dl, "same lines, other order", (lines, f.docx("dl1.docx", ["three", "one two"]))),
        Case(dl, "whitespace", (lines, f.docx("dl2.docx", [" one two ", "three"]))),
        Case(dl, "one differs", (lines, f.docx("dl3.docx", ["one two", "four"]))), Case(dl, "None", (None, lines)),
        Case(dl, "missing file", (f.missing, lines)),
    ]
    sub = f.docx_with("sb1.docx", runs(("H", {}), ("2", {"subscript": True}), ("O", {})))
    sc = "compare_subscript_contains"
    cases += [
        Case(sc, "both subscript", (sub, f.docx_with("sb2.docx", runs(("H", {}), ("2", {"subscript": True}))))),
        Case(sc, "no subscript", (sub, f.docx("sb3.docx", ["H2O"]))),
        Case(sc, "superscript instead", (sub, f.docx_with("sb4.docx", runs(("H", {}), ("2", {"superscript": True}))))),
        Case(sc, "None", (None, sub)), Case(sc, "missing file", (f.missing, sub)),
    ]
    pn = "has_page_numbers_in_footers"
    cases += [
        Case(pn, "number in footer", (f.docx_with("ft1.docx", runs(("body", {}), footer="Page 1")),)),
        Case(pn, "words only", (f.docx_with("ft2.docx", runs(("body", {}), footer="Page one")),)),
        Case(pn, "no footer text", (f.docx("ft3.docx", ["body"]),)), Case(pn, "None", (None,)),
        Case(pn, "missing file", (f.missing,)),
    ]
    italic = f.docx_with("it1.docx", runs(("plain ", {}), ("slanted", {"italic": True, "size": 14})))
    it = "check_italic_font_size_14"
    cases += [
        Case(it, "italic at 14", (italic, f.docx("it2.docx", ["plain slanted"]))),
        Case(it, "italic at 12", (f.docx_with("it3.docx",
                                              runs(("plain ", {}), ("slanted", {"italic": True, "size": 12}))),
                                  f.docx("it4.docx", ["plain slanted"]))),
        Case(it, "text differs", (italic, f.docx("it5.docx", ["other"]))), Case(it, "None", (italic, None)),
        Case(it, "missing file", (f.missing, italic)),
    ]
    struck = f.docx_with("st1.docx", runs(("gone", {"strike": True}), (" too", {"strike": True})))
    sl = "evaluate_strike_through_last_paragraph"
    cases += [
        Case(sl, "struck through", (struck, f.docx("st2.docx", ["gone too"]))),
        Case(sl, "partly struck", (f.docx_with("st3.docx", runs(("gone", {"strike": True}), (" too", {}))),
                                   f.docx("st4.docx", ["gone too"]))),
        Case(sl, "text differs", (struck, f.docx("st5.docx", ["kept"]))), Case(sl, "None", (None, struck)),
        Case(sl, "missing file", (f.missing, struck)),
    ]
    return cases


def _files_more(f: Files) -> list[Case]:
    font = f.text("font.xcu", f'<?xml version="1.0"?><oor:items xmlns:oor="{OOR}"><item '
                              'oor:path="/org.openoffice.Office.Writer/DefaultFont"><prop oor:name="Standard" '
                              'oor:op="fuse"><value>Liberation Serif</value></prop></item></oor:items>')
    df = "find_default_font"
    cases = [
        Case(df, "font set", (font, {"font_name": "Liberation Serif"})),
        Case(df, "other font", (font, {"font_name": "Arial"})),
        Case(df, "not set", (f.xcu("font2.xcu", "3"), {"font_name": "Arial"})),
        Case(df, "None", (None, {"font_name": "x"})),
        Case(df, "missing file", (f.missing, {"font_name": "x"})),
    ]
    (f.root / "exists").mkdir(exist_ok=True)
    (f.root / "exists" / "out.png").write_bytes(b"x")
    fe = "check_file_exists"
    cases += [
        Case(fe, "present", (str(f.root / "exists"), "out.png")),
        Case(fe, "absent", (str(f.root / "exists"), "in.png")),
        Case(fe, "a folder", (str(f.root), "exists")), Case(fe, "None folder", (None, "out.png")),
        Case(fe, "case", (str(f.root / "exists"), "OUT.png")),
    ]
    gold = f.zip("z1.zip", {"a.txt": b"alpha", "b/c.txt": b"gamma"})
    zc = "compare_zip_files"
    cases += [
        Case(zc, "same members", (f.zip("z2.zip", {"b/c.txt": b"gamma", "a.txt": b"alpha"}), gold)),
        Case(zc, "content differs", (f.zip("z3.zip", {"a.txt": b"alpha", "b/c.txt": b"GAMMA"}), gold)),
        Case(zc, "member missing", (f.zip("z4.zip", {"a.txt": b"alpha"}), gold)), Case(zc, "None", (None, gold)),
        Case(zc, "missing file", (f.missing, gold)), Case(zc, "not a zip", (f.text("z5.zip", "text"), gold)),
    ]
    page = '<html><body><p class="x">Hello <b>world</b></p><td sdnum="1033">5</td></body></html>'
    html = f.text("h1.html", page)
    hc = "compare_htmls"
    cases += [
        Case(hc, "identical", (html, f.text("h2.html", page))),
        Case(hc, "text differs", (html, f.text("h3.html", page.replace("world", "there")))),
        Case(hc, "sdnum ignored", (html, f.text("h4.html", page.replace('sdnum="1033"', 'sdnum="1031"'))),
             {"ignore_sdnum": True}),
        Case(hc, "sdnum counts", (html, f.text("h5.html", page.replace('sdnum="1033"', 'sdnum="1031"')))),
        Case(hc, "missing file", (f.missing, html)),
        Case(hc, "whitespace", (html, f.text("h6.html", page.replace("<b>", " <b>")))),
    ]
    import sqlite3

    db = f.path("history.sqlite")
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE urls (url TEXT, visits INTEGER)")
        conn.executemany("INSERT INTO urls VALUES (?, ?)", [("https://a.example", 3), ("https://b.example", 0)])
    conn.close()
    sq = "run_sqlite3"
    cases += [
        Case(sq, "count", (db, {"sql": "SELECT COUNT(*) FROM urls"})),
        Case(sq, "zero", (db, {"sql": "SELECT visits FROM urls WHERE url = 'https://b.example'"})),
        Case(sq, "NULL", (db, {"sql": "SELECT NULL"})), Case(sq, "bad SQL", (db, {"sql": "SELEC"})),
        Case(sq, "no table", (f.path("empty.sqlite"), {"sql": "SELECT COUNT(*) FROM urls"})),
        Case(sq, "no row", (db, {"sql": "SELECT visits FROM urls WHERE 0"})),
    ]

    def locale(name: str, setup: str | None, ui: str) -> str:
        prop = "" if setup is None else f'<prop oor:name="ooSetupSystemLocale"><value>{setup}</value></prop>'
        return f.text(name, f'<?xml version="1.0"?><oor:items xmlns:oor="{OOR}"><item '
                            f'oor:path="/org.openoffice.Setup/L10N">{prop}</item><item '
                            'oor:path="/org.openoffice.Setup/L10N">'
                            f'<prop oor:name="ooLocale"><value>{ui}</value></prop></item></oor:items>')

    lc = "check_libre_locale"
    cases += [
        Case(lc, "setup locale matches", (locale("l1.xcu", "de-DE", "en-US"), {"locale_set": ["de-*"]})),
        Case(lc, "falls back to ooLocale", (locale("l2.xcu", None, "fr-FR"), {"locale_set": ["fr-FR"]})),
        Case(lc, "no match", (locale("l3.xcu", "de-DE", "en-US"), {"locale_set": ["en-*"]})),
        Case(lc, "case", (locale("l4.xcu", "de-DE", "x"), {"locale_set": ["DE-de"]})),
        Case(lc, "missing file", (f.missing, {"locale_set": ["x"]})),
        Case(lc, "not XML", (f.text("l5.xcu", "<"), {"locale_set": []})),
    ]
    prefs = f.text("prefs.js", '// Mozilla User Preferences\nuser_pref("mail.spellcheck.inline", false);\n'
                               'user_pref("mailnews.default_sort_order", 2);\nuser_pref("mail.identity.id1.fullName", '
                               '"Ada L");\n')
    tp = "check_thunderbird_prefs"
    cases += [
        Case(tp, "expected values", (prefs, {"expect": {"mail.spellcheck.inline": {"method": "eq", "ref": False},
                                                        "mailnews.default_sort_order": {"method": "eq", "ref": 2}}})),
        Case(tp, "value differs", (prefs, {"expect": {"mailnews.default_sort_order": {"method": "eq", "ref": 1}}})),
        Case(tp, "key absent", (prefs, {"expect": {"mail.other": {"method": "eq", "ref": 1}}})),
        Case(tp, "unexpected value present",
             (prefs, {"unexpect": {"mail.identity.id1.fullName": {"method": "re", "ref": "Ada"}}})),
        Case(tp, "None", (None, {"expect": {}})), Case(tp, "missing file", (f.missing, {"expect": {}})),
    ]
    box = "FROM - Mon Jan 1\nX-Mozilla-Status: 0001\nSubject: hi\n\nbody\n"
    mbox = f.text("Inbox", box)
    tf = "check_thunderbird_folder"
    cases += [
        Case(tf, "same folder", (mbox, f.text("Inbox2", box))),
        Case(tf, "other mail", (mbox, f.text("Inbox3", box.replace("hi", "bye")))),
        Case(tf, "ignore_status", (mbox, f.text("Inbox4", box.replace("0001", "0000"))), {"ignore_status": True}),
        Case(tf, "lists", ([mbox, mbox], [mbox, f.text("Inbox5", "")])), Case(tf, "None", (None, mbox)),
        Case(tf, "missing file", (f.missing, mbox)),
    ]
    return cases


#: Groups of cases, in the order the table lists them.
EXTRA_GROUPS: tuple[Callable[[Files], list[Case]], ...] = (_general_more, _chrome_more, _os_more, _vlc_more,
                                                           _images_more, _docs_more, _files_more)
