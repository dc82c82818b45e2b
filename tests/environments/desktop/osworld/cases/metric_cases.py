"""Differential cases for every OSWorld metric MintGym exposes, on real files made here.

Each metric gets at least five cases: identical inputs, clearly different ones, None, a missing file, and
whitespace/case/encoding edges, plus every option the bundled OSWorld tasks pass it. :mod:`.metric_diff`
runs them against desktop-env's functions. An ``own`` metric is compared with desktop-env's function of
the same name, or, where desktop-env 1.0.2 has none, with the OSWorld repository's own function
(``Case.official``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.environments.desktop.osworld.cases.metric_cases_extra import EXTRA_GROUPS
from tests.environments.desktop.osworld.cases.metric_cases_media import MEDIA_GROUPS
from tests.environments.desktop.osworld.cases.metric_cases_office import OFFICE_GROUPS
from tests.environments.desktop.osworld.cases.metric_inputs import Case, Files


def _general(f: Files) -> list[Case]:
    inc = "check_include_exclude"
    cases = [
        Case(inc, "all in, none out", ("Hello world", {"include": ["Hello"], "exclude": ["bye"]})),
        Case(inc, "include missing", ("Hello", {"include": ["Hello", "world"]})),
        Case(inc, "None", (None, {"include": ["x"]})),
        Case(inc, "case differs", ("HELLO", {"include": ["hello"]})),
        Case(inc, "excluded whitespace", ("a\tb\n", {"include": ["a"], "exclude": ["\t"]})),
        Case(inc, "empty rules", ("", {})),
    ]
    em = "exact_match"
    cases += [
        Case(em, "equal", ("42", {"expected": "42"})), Case(em, "different", ("42", {"expected": "43"})),
        Case(em, "None vs None", (None, {"expected": None})), Case(em, "trailing space", ("42 ", {"expected": "42"})),
        Case(em, "unicode", ("Zürich", {"expected": "Zürich"})), Case(em, "int vs str", (42, {"expected": "42"})),
    ]
    ml = "match_in_list"
    cases += [
        Case(ml, "in list", ("b", {"expected": ["a", "b"]})), Case(ml, "not in list", ("c", {"expected": ["a", "b"]})),
        Case(ml, "None", (None, {"expected": ["a"]})), Case(ml, "case", ("A", {"expected": ["a"]})),
        Case(ml, "substring of a str", ("bc", {"expected": "abc"})),
    ]
    il = "is_in_list"
    cases += [
        Case(il, "substring", ("a b c", {"expected": "b"})), Case(il, "list member", (["x", "y"], {"expected": "y"})),
        Case(il, "None", (None, {"expected": "b"})), Case(il, "case", ("ABC", {"expected": "b"})),
        Case(il, "absent", ("xyz", {"expected": "q"})),
    ]
    lm = "literal_match"
    cases += [
        Case(lm, "equal", ("a", "a")), Case(lm, "different", ("a", "b")),
        Case(lm, "ignore_case", ("ABC", "abc"), {"ignore_case": True}),
        Case(lm, "None vs 'None'", (None, "None")), Case(lm, "number vs text", (1, "1")),
        Case(lm, "list ignore_case (task option)", (["a", "B"], ["A", "b"]), {"ignore_case": True, "type": "list"}),
        Case(lm, "list lengths differ", (["a"], ["a", "b"]), {"type": "list"}),
        Case(lm, "list vs str", ("a", ["a"]), {"type": "list", "ignore_case": True}),
        Case(lm, "unknown type", ("a", "a"), {"type": "set"}),
    ]
    a = f.text("diff_a.txt", "one\ntwo\nthree\n")
    diff = "diff_text_file"
    cases += [
        Case(diff, "identical", (a, f.text("diff_b.txt", "one\ntwo\nthree\n"))),
        Case(diff, "different", (a, f.text("diff_c.txt", "uno\ndos\n"))),
        Case(diff, "None", (None, a)), Case(diff, "missing file", (f.missing, a)),
        Case(diff, "CRLF", (f.text("diff_crlf.txt", "one\r\ntwo\r\nthree\r\n"), a)),
        Case(diff, "latin-1 bytes", (f.text("diff_l1.txt", "caf\xe9\n", "latin-1"), a)),
    ]
    cj = "check_json"
    data = f.json("cj.json", {"editor": {"fontSize": 14, "theme": "Dark+"}, "name": "x"})
    cases += [
        Case(cj, "eq match", (data, {"expect": [{"key": ["editor", "fontSize"], "method": "eq", "ref": 14}]})),
        Case(cj, "eq mismatch", (data, {"expect": [{"key": ["editor", "fontSize"], "method": "eq", "ref": 12}]})),
        Case(cj, "None", (None, {"expect": []})), Case(cj, "missing file", (f.missing, {"expect": []})),
        Case(cj, "not JSON", (f.text("cj_bad.json", "{oops"), {"expect": []})),
        Case(cj, "regex with flag", (data,
                                     {"expect": [{"key": ["editor", "theme"], "method": "re.I", "ref": "dark"}]})),
        Case(cj, "unexpect absent key", (data, {"unexpect": [{"key": ["nope"], "method": "eq", "ref": 1}]})),
        Case(cj, "yaml", (f.text("cj.yaml", "a:\n  b: 3\n"),
                          {"expect": [{"key": ["a", "b"], "method": "eq", "ref": 3}]}),
             {"is_yaml": True}),
    ]
    csv_path = f.text("cc.csv", "name,age\nAda,36\nBob,41\n")
    cc = "check_csv"
    cases += [
        Case(cc, "record present", (csv_path, {"expect": [{"name": "Ada", "age": "36"}]})),
        Case(cc, "record absent", (csv_path, {"expect": [{"name": "Eve"}]})),
        Case(cc, "None", (None, {"expect": []})), Case(cc, "missing file", (f.missing, {"expect": []})),
        Case(cc, "unexpected present", (csv_path, {"unexpect": [{"name": "Bob"}]})),
        Case(cc, "whitespace in value", (f.text("cc_ws.csv", "name,age\nAda ,36\n"), {"expect": [{"name": "Ada"}]})),
    ]
    ns = 'xmlns:st="https://accessibility.ubuntu.example.org/ns/state"'
    tree = f'<desktop-frame {ns}><application name="Files"><label name="path">Home</label>' \
           f'<push-button name="ok" st:enabled="true">Save</push-button></application></desktop-frame>'
    at = "check_accessibility_tree"
    cases += [
        Case(at, "css exact text", (tree, [{"selectors": ['push-button[name="ok"]'], "text": "Save", "exact": True}])),
        Case(at, "css wrong text", (tree, [{"selectors": ['push-button[name="ok"]'], "text": "save", "exact": True}])),
        Case(at, "fuzzy text", (tree, [{"selectors": ["label"], "text": "Homes", "exact": False}])),
        Case(at, "xpath no element", (tree, [{"xpath": "//menu"}])),
        Case(at, "None", (None, [{"xpath": "//label"}])),
        Case(at, "no selector", (tree, [{"text": "x"}])),
    ]
    txt = f.text("fc.txt", "alpha beta\ngamma\n")
    fc = "file_contains"
    cases += [
        Case(fc, "all found", (txt, {"expected": ["alpha", "gamma"]})),
        Case(fc, "one missing", (txt, {"expected": ["alpha", "delta"]})),
        Case(fc, "None", (None, {"expected": ["a"]})), Case(fc, "missing file", (f.missing, {"expected": ["a"]})),
        Case(fc, "case", (txt, {"expected": ["ALPHA"]})),
        Case(fc, "non-UTF-8 file", (f.text("fc_l1.txt", "caf\xe9", "latin-1"), {"expected": ["caf"]})),
    ]
    log = f.text("ln.txt", "12:00:01 start\nno time\n23:59:60 leap\n24:00:00 bad\n")
    ln = "check_line_number"
    cases += [
        Case(ln, "two stamped lines", (log, {"expected": 2})), Case(ln, "wrong count", (log, {"expected": 3})),
        Case(ln, "None", (None, {"expected": 0})), Case(ln, "missing file", (f.missing, {"expected": 0})),
        Case(ln, "count as text", (log, {"expected": "2"})),
        Case(ln, "not a number", (log, {"expected": "two"})),
    ]
    return cases


def _chrome(f: Files) -> list[Case]:
    one = f.pdf("one.pdf", ["Quarterly report", "Page two"])
    cp = "compare_pdfs"
    cases = [
        Case(cp, "identical", (one, f.pdf("one_copy.pdf", ["Quarterly report", "Page two"]))),
        Case(cp, "different", (one, f.pdf("other.pdf", ["Something else entirely"]))),
        Case(cp, "lists", ([one, one], [one, f.pdf("half.pdf", ["Quarterly"])])),
        Case(cp, "missing file", (f.missing, one)),
        Case(cp, "case", (one, f.pdf("upper.pdf", ["QUARTERLY REPORT", "PAGE TWO"]))),
    ]
    cookies = [("id1", ".amazon.com", "session"), ("id2", "www.example.org", "pref")]
    cd = "is_cookie_deleted"
    cases += [
        Case(cd, "still there", (cookies, {"type": "domains", "domains": [".amazon.com"]})),
        Case(cd, "deleted", (cookies, {"type": "domains", "domains": ["google.com"]})),
        Case(cd, "subdomain", (cookies, {"type": "domains", "domains": ["example.org"]})),
        Case(cd, "no cookies", ([], {"type": "domains", "domains": [".amazon.com"]})),
        Case(cd, "None", (None, {"type": "domains", "domains": ["a.com"]})),
        Case(cd, "unknown rule type", (cookies, {"type": "names"})),
    ]
    desk = {"/home/user/Desktop/a.desktop": "[Desktop Entry]\nName=Gmail\nExec=chrome --app=x\n"}
    sc = "is_shortcut_on_desktop"
    cases += [
        Case(sc, "name found", (desk, {"type": "name", "name": "Gmail"})),
        Case(sc, "name absent", (desk, {"type": "name", "name": "gmail"})),
        Case(sc, "exec found", (desk, {"type": "exec", "exec": "chrome --app=x"})),
        Case(sc, "url unsupported", (desk, {"type": "url"})),
        Case(sc, "None", (None, {"type": "name", "name": "Gmail"})),
        Case(sc, "no shortcuts", ({}, {"type": "exec", "exec": "x"})),
    ]
    at = "is_expected_active_tab"
    rule = {"type": "url", "url": "https://www.example.com/docs"}
    cases += [
        Case(at, "same url", ({"url": "https://www.example.com/docs"}, rule)),
        Case(at, "trailing slash", ({"url": "https://www.example.com/docs/"}, rule)),
        Case(at, "other site", ({"url": "https://www.example.org/docs"}, rule)),
        Case(at, "None", (None, rule)), Case(at, "plain string", ("https://example.com/docs", rule)),
        Case(at, "unknown type", ({"url": "x"}, {"type": "title"})),
    ]
    fs = "check_font_size"
    cases += [
        Case(fs, "value", ({"default_font_size": 20}, {"type": "value", "value": 20})),
        Case(fs, "value differs", ({"default_font_size": 16}, {"type": "value", "value": 20})),
        Case(fs, "in range", ({"default_font_size": 18}, {"type": "range", "min": 16, "max": 20})),
        Case(fs, "range bound", ({"default_font_size": 16}, {"type": "range", "min": 16, "max": 20})),
        Case(fs, "None", (None, {"type": "value", "value": 1})),
        Case(fs, "unknown type", ({"default_font_size": 1}, {"type": "x"})),
    ]
    return cases


def _docs(f: Files) -> list[Case]:
    base = f.docx("d_base.docx", ["First line here", "Second  line", ""])
    same = f.docx("d_same.docx", ["First line here", "Second  line", ""])
    other = f.docx("d_other.docx", ["Completely different", "text"])
    upper = f.docx("d_upper.docx", ["FIRST LINE HERE", "SECOND  LINE"])
    swapped = f.docx("d_swapped.docx", ["Second  line", "First line here"])
    dx = "compare_docx_files"
    cases = [
        Case(dx, "identical", (base, same)), Case(dx, "different", (base, other)), Case(dx, "None", (None, base)),
        Case(dx, "missing file", (f.missing, base)),
        Case(dx, "ignore_case", (upper, base), {"ignore_case": True}),
        Case(dx, "case counts by default", (upper, base)),
        Case(dx, "ignore_order", (swapped, base), {"ignore_order": True}),
        Case(dx, "content_only", (swapped, base), {"content_only": True}),
        Case(dx, "ignore_blanks off", (base, same), {"ignore_blanks": False}),
    ]
    s15 = f.docx("s15.docx", ["a", "b"], spacing=1.5)
    ls = "compare_line_spacing"
    cases += [
        Case(ls, "same spacing", (s15, f.docx("s15b.docx", ["a", "b"], spacing=1.5))),
        Case(ls, "different spacing", (s15, f.docx("s2.docx", ["a", "b"], spacing=2.0))),
        Case(ls, "different text", (s15, f.docx("s15c.docx", ["a", "c"], spacing=1.5))),
        Case(ls, "None", (None, s15)), Case(ls, "missing file", (f.missing, s15)),
    ]
    t1 = f.docx("t1.docx", ["one two three\tx", "four five six\ty"], tabs=[(3.0, "RIGHT")])
    ts = "check_tabstops"
    opts = {"index": 0, "word_number_split_by_tabstop": 3}
    cases += [
        Case(ts, "same tab stops (task options)", (t1, f.docx("t2.docx", ["one two three\tx", "a b c\ty"],
                                                                 tabs=[(3.0, "RIGHT")])), opts),
        Case(ts, "moved tab stop", (t1, f.docx("t3.docx", ["a b c\tx", "d e f\ty"], tabs=[(2.0, "RIGHT")]))),
        Case(ts, "other alignment", (t1, f.docx("t4.docx", ["a b c\tx", "d e f\ty"], tabs=[(3.0, "LEFT")]))),
        Case(ts, "word count wrong", (f.docx("t5.docx", ["one two\tx", "a b\ty"], tabs=[(3.0, "RIGHT")]), t1), opts),
        Case(ts, "None", (None, t1)), Case(ts, "missing file", (f.missing, t1)),
    ]
    return cases


def _gimp(f: Files) -> list[Case]:
    rc = f.text("gimprc", "# GIMP gimprc\n\n(theme \"Dark\")\n(default-image (width 1920))\n(show-tips no)\n")
    cs = "check_config_status"
    cases = [
        Case(cs, "key and value", (rc, {"key": "show-tips", "value": "no"})),
        Case(cs, "value differs", (rc, {"key": "show-tips", "value": "yes"})),
        Case(cs, "two-part key", (rc, {"key": ["default-image", "(width"], "value": "1920"})),
        Case(cs, "quoted value", (rc, {"key": "theme", "value": '"Dark"'})),
        Case(cs, "None", (None, {"key": "a", "value": "b"})),
        Case(cs, "missing file", (f.missing, {"key": "a", "value": "b"})),
    ]
    img = f.png("img.png")
    il = "compare_image_list"
    cases += [
        Case(il, "identical", (img, f.png("img_copy.png"))),
        Case(il, "different", (img, f.png("img_dark.png", shade=0.5))),
        Case(il, "lists", ([img, img], [img, f.png("img_flip.png", flip=True)])),
        Case(il, "None in list", ([img, None], [img, img])),
        Case(il, "other size", (f.png("img_big.png", size=96), img)),
        Case(il, "missing file", (f.missing, img)),
    ]
    bd = "check_brightness_decrease_and_structure_sim"
    dark = f.png("dark.png", shade=0.6)
    cases += [
        Case(bd, "darker, same structure", (dark, img)), Case(bd, "unchanged", (img, img)),
        Case(bd, "brighter", (f.png("bright.png", shade=1.3), img)), Case(bd, "None", (None, img)),
        Case(bd, "different structure", (f.png("dark_flip.png", shade=0.6, flip=True), img)),
        Case(bd, "missing file", (f.missing, img)),
    ]
    si = "check_saturation_increase_and_structure_sim"
    cases += [
        Case(si, "more saturated", (f.png("sat.png", saturation=1.8), img)), Case(si, "unchanged", (img, img)),
        Case(si, "less saturated", (f.png("desat.png", saturation=0.4), img)), Case(si, "None", (img, None)),
        Case(si, "different structure", (f.png("sat_flip.png", saturation=1.8, flip=True), img)),
        Case(si, "missing file", (f.missing, img)),
    ]
    return cases


def _basic_os(f: Files) -> list[Case]:
    cb = "is_in_vm_clickboard"
    cases = [
        Case(cb, "text in output", ({"expected": "hello"}, "say hello world")),
        Case(cb, "text absent", ({"expected": "bye"}, "say hello")),
        Case(cb, "all of a list", ({"expected": ["a", "b"]}, "a and b")),
        Case(cb, "one of a list missing", ({"expected": ["a", "z"]}, "a and b")),
        Case(cb, "None output", ({"expected": "a"}, None)), Case(cb, "case", ({"expected": "Hello"}, "hello")),
    ]
    ga = "check_gnome_favorite_apps"
    rule = {"expected": ["thunderbird.desktop", "vim.desktop"]}
    cases += [
        Case(ga, "same apps", ("['thunderbird.desktop', 'vim.desktop']", rule)),
        Case(ga, "other order", ("['vim.desktop', 'thunderbird.desktop']\n", rule)),
        Case(ga, "different app", ("['thunderbird.desktop', 'gedit.desktop']", rule)),
        Case(ga, "one more", ("['thunderbird.desktop', 'vim.desktop', 'x.desktop']", rule)),
        Case(ga, "empty gsettings array", ("@as []", rule)),
        Case(ga, "duplicates", ("['vim.desktop', 'vim.desktop']", rule)),
        Case(ga, "None", (None, rule)),
    ]
    return cases


def _slides(f: Files) -> list[Case]:
    a = f.pptx("p_a.pptx", ["Title one", "Second slide"])
    opts = {"examine_shape": False, "examine_bullets": False}
    cp = "compare_pptx_files"
    cases = [
        Case(cp, "identical", (a, f.pptx("p_b.pptx", ["Title one", "Second slide"]))),
        Case(cp, "different text", (a, f.pptx("p_c.pptx", ["Title one", "Changed"]))),
        Case(cp, "fewer slides", (a, f.pptx("p_d.pptx", ["Title one"]))),
        Case(cp, "task options", (a, f.pptx("p_e.pptx", ["Title one", "Second slide"])), opts),
        Case(cp, "case (task options)", (a, f.pptx("p_f.pptx", ["TITLE ONE", "Second slide"])), opts),
        Case(cp, "missing file", (f.missing, a)),
    ]
    pic = f.png("slide_pic.png")
    original = f.pptx("i_orig.pptx", ["x"], picture=pic)
    sc = "check_image_stretch_and_center"
    cases += [
        Case(sc, "stretched", (f.pptx("i_str.pptx", ["x"], picture=pic, stretch=True), original)),
        Case(sc, "untouched", (original, original)),
        Case(sc, "other picture", (f.pptx("i_other.pptx", ["x"], picture=f.png("pic2.png", flip=True), stretch=True),
                                   original)),
        Case(sc, "no picture", (original, f.pptx("i_none.pptx", ["x"]))),
        Case(sc, "missing file", (f.missing, original)),
    ]
    at = "check_auto_saving_time"
    three = f.xcu("as3.xcu", "3")
    cases += [
        Case(at, "three minutes", (three, {"minutes": 3})),
        Case(at, "ten minutes", (f.xcu("as10.xcu", "10"), {"minutes": 3})),
        Case(at, "not set", (f.xcu("asnone.xcu", None), {"minutes": 3})),
        Case(at, "minutes as text", (three, {"minutes": "3"})),
        Case(at, "value with spaces", (f.xcu("asws.xcu", " 3 "), {"minutes": 3})),
        Case(at, "not XML", (f.text("bad.xcu", "<oor:items"), {"minutes": 3})),
        Case(at, "missing file", (f.missing, {"minutes": 3})), Case(at, "None", (None, {"minutes": 3})),
    ]
    return cases


def _table(f: Files) -> list[Case]:
    rows = [["Name", "Score"], ["Ada", 36], ["Bob", 41.5]]
    want = f.xlsx("t_want.xlsx", {"Sheet1": rows, "Sheet2": [["x"]]})
    same = f.xlsx("t_same.xlsx", {"Sheet1": rows, "Sheet2": [["x"]]})
    diff = f.xlsx("t_diff.xlsx", {"Sheet1": [["Name", "Score"], ["Ada", 37], ["Bob", 41.5]], "Sheet2": [["x"]]})
    spaced = f.xlsx("t_space.xlsx", {"Sheet1": [["name ", "SCORE"], [" Ada", 36], ["Bob", 41.5]], "Sheet2": [["x"]]})
    data = {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}
    fuzzy = {"rules": [{"type": "sheet_fuzzy", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1", "rules": [
        {"range": ["A1:B1"], "type": "includes", "ignore_case": True},
        {"range": ["A2:A3"], "type": "exact_match", "trim_leadings": " ", "trim_trailings": " "},
        {"range": ["A2:A3"], "type": "fuzzy_match", "threshold": 85, "ignore_case": True,
         "normalization": [["Bob", "Robert"]]}]}]}
    cell = {"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "B3",
                       "props": {"value": {"method": "approx:0.1", "ref": 41.45}}}]}
    ct = "compare_table"
    cases = [
        Case(ct, "identical sheet_data", (same, want), data), Case(ct, "different cell", (diff, want), data),
        Case(ct, "None", (None, want), data), Case(ct, "missing file", (f.missing, want), data),
        Case(ct, "by sheet name (task rules)", (same, want),
             {"rules": [{"type": "sheet_data", "sheet_idx0": "RNSheet2", "sheet_idx1": "ENSheet2"}]}),
        Case(ct, "sheet_fuzzy trims and case", (spaced, want), fuzzy),
        Case(ct, "sheet_fuzzy differs", (diff, want), fuzzy),
        Case(ct, "check_cell approx", (same, None), cell), Case(ct, "check_cell off", (diff, None),
                                                                 {"rules": [{"type": "check_cell", "sheet_idx": 0,
                                                                             "coordinate": "B2", "props": {"value": {
                                                                                 "method": "approx:0.1",
                                                                                 "ref": 36}}}]}),
        Case(ct, "sheet_name", (f.xlsx("t_names.xlsx", {"Other": rows}), want), {"rules": [{"type": "sheet_name"}]}),
        Case(ct, "not a workbook", (f.text("t_bad.xlsx", "not a zip"), want), data),
    ]
    good = f.text("c_want.csv", "a,b\n1,2\n")
    cc = "compare_csv"
    cases += [
        Case(cc, "identical", (f.text("c_same.csv", "a,b\n1,2\n"), good)),
        Case(cc, "different", (f.text("c_diff.csv", "a,b\n1,3\n"), good)),
        Case(cc, "list of expected files",
             (f.text("c_alt.csv", "a,b\n9,9\n"), [good, f.text("c_alt2.csv", "a,b\n9,9\n")])),
        Case(cc, "None", (None, good)), Case(cc, "missing result", (f.missing, good)),
        Case(cc, "spaces, strict off", (f.text("c_ws.csv", " a,b \n1,2\n"), good), {"strict": False}),
        Case(cc, "case, ignore_case", (f.text("c_case.csv", "A,B\n1,2\n"), good), {"ignore_case": True}),
        Case(cc, "latin-1 file", (f.text("c_l1.csv", "a,b\ncafé,2\n", "latin-1"), f.text("c_u8.csv", "a,b\ncafé,2\n"))),
        Case(cc, "CRLF", (f.text("c_crlf.csv", "a,b\r\n1,2\r\n"), good)),
    ]
    return cases


def _vlc(f: Files) -> list[Case]:
    def rc(name: str, *lines: str) -> str:
        return f.text(name, "\n".join(["# VLC preferences", "[qt] # Qt interface", *lines, ""]))

    sl = "check_qt_slider_colours"
    black = "10;10;10;20;20;20;30;30;30;0;0;0"
    cases = [
        Case(sl, "match", (rc("v1", f"qt-slider-colours={black}"),
                           {"type": "match", "expected_qt_slider_colours": black})),
        Case(sl, "blackish", (rc("v2", f"qt-slider-colours={black}"), {"type": "blackish"})),
        Case(sl, "default is not blackish", (rc("v3"), {"type": "blackish"})),
        Case(sl, "commented line counts", (rc("v4", f"#qt-slider-colours={black}"), {"type": "blackish"})),
        Case(sl, "not numbers", (rc("v5", "qt-slider-colours=a;b;c"), {"type": "blackish"})),
        Case(sl, "missing file", (f.missing, {"type": "blackish"})),
    ]
    rf = "is_vlc_recordings_folder"
    rule = {"recording_file_path": "/home/user/Desktop"}
    cases += [
        Case(rf, "set", (rc("r1", "input-record-path=/home/user/Desktop"), rule)),
        Case(rf, "trailing slash", (rc("r2", "input-record-path=/home/user/Desktop/"), rule)),
        Case(rf, "commented only", (rc("r3", "#input-record-path=/home/user/Desktop"), rule)),
        Case(rf, "spaces", (rc("r4", "input-record-path = /home/user/Desktop "), rule)),
        Case(rf, "missing file", (f.missing, rule)),
        Case(rf, "non-UTF-8 file", (f.text("r5", "# caf\xe9\ninput-record-path=/home/user/Desktop\n", "latin-1"),
                                    rule)),
    ]
    oi = "check_one_instance_when_started_from_file"
    key = "expected_one_instance_when_started_from_file"
    cases += [
        Case(oi, "set 0", (rc("o1", "one-instance-when-started-from-file=0"), {key: 0})),
        Case(oi, "default 1", (rc("o2"), {key: 0})), Case(oi, "default matches", (rc("o3"), {key: 1})),
        Case(oi, "commented line counts", (rc("o4", "#one-instance-when-started-from-file=0"), {key: "0"})),
        Case(oi, "missing file", (f.missing, {key: 0})),
        Case(oi, "string vs int", (rc("o5", "one-instance-when-started-from-file=0"), {key: "0"})),
    ]
    pe = "check_play_and_exit"  # newer than desktop-env 1.0.2: OSWorld's repository is the reference
    for i, (lines, expected, label) in enumerate([
            (["play-and-exit=0"], 0, "set 0"), (["play-and-exit=1"], 0, "set 1"), ([], 0, "default 0"),
            (["#play-and-exit=1"], 0, "commented line counts"), (["play-and-exit=0 "], "0", "string, spaces"),
            (["play-and-exit=1", "#play-and-exit=0"], 1, "last line wins")]):
        cases.append(Case(pe, label, (rc(f"pe{i}", *lines), {"expected_play_and_exit": expected}), official="vlc"))
    cases.append(Case(pe, "missing file", (f.missing, {"expected_play_and_exit": 0}), official="vlc"))
    cases.append(Case(pe, "not UTF-8", (f.text("pe_l1", "# caf\xe9\nplay-and-exit=1\n", "latin-1"),
                                        {"expected_play_and_exit": 1}), official="vlc"))

    def status(name: str, state: str, **meta: str) -> str:
        info = "".join(f'<info name="{k}">{v}</info>' for k, v in meta.items())
        return f.text(name, f'<?xml version="1.0"?><root><state>{state}</state><information>'
                            f'<category name="meta">{info}</category></information></root>')

    vp = "is_vlc_playing"
    song = {"type": "file_name", "file_name": "song.mp3"}
    cases += [
        Case(vp, "playing the file", (status("st1", "playing", filename="song.mp3"), song)),
        Case(vp, "paused", (status("st2", "paused", filename="song.mp3"), song)),
        Case(vp, "other file", (status("st3", "playing", filename="other.mp3"), song)),
        Case(vp, "path in uri", (status("st4", "playing", uri="file:///home/user/song.mp3"), song)),
        Case(vp, "url", (status("st5", "playing", url="https://example.com/live/stream.m3u8"),
                         {"type": "url", "url": "https://example.com/live/stream.m3u8"})),
        Case(vp, "missing file", (f.missing, song)), Case(vp, "not XML", (f.text("st6", "<root"), song)),
    ]
    au = "compare_audios"
    tone = f.wav("a440.wav", 440)
    cases += [
        Case(au, "identical", (tone, f.wav("a440b.wav", 440))),
        Case(au, "different pitch", (tone, f.wav("a880.wav", 880))),
        Case(au, "None", (None, tone)), Case(au, "missing file", (f.missing, tone)),
        Case(au, "both missing", (f.missing, f.missing)), Case(au, "empty audio", (f.wav("empty.wav", 440, 0.0), tone)),
    ]
    return cases


def _vscode(f: Files) -> list[Case]:
    a = f.text("vs_a.txt", "Hello World\n\tline two\n")
    ct = "compare_text_file"
    cases = [
        Case(ct, "identical", (a, f.text("vs_b.txt", "Hello World\n\tline two\n"))),
        Case(ct, "different", (a, f.text("vs_c.txt", "Bye\n"))),
        Case(ct, "ignore_blanks", (a, f.text("vs_d.txt", "Hello   World line two")), {"ignore_blanks": True}),
        Case(ct, "ignore_case", (a, f.text("vs_e.txt", "hello world\n\tLINE two\n")), {"ignore_case": True}),
        Case(ct, "None", (None, a)), Case(ct, "missing expected", (a, f.missing)),
    ]
    conf = f.text("vs_conf", "[core]\nfilemode = false\n")
    cc = "compare_config"
    cases += [
        Case(cc, "equal", (conf, {"expected": "[core]\nfilemode = false\n"}), {"containment_ok": True}),
        Case(cc, "different", (conf, {"expected": "[core]\n"}), {"containment_ok": True}),
        Case(cc, "no trailing newline", (conf, {"expected": "[core]\nfilemode = false"})),
        Case(cc, "None", (None, {"expected": ""})), Case(cc, "missing file", (f.missing, {"expected": ""})),
    ]
    ext = "ms-python.python@2024.1.0\nesbenp.prettier-vscode@10.1.0\n"
    ei = "is_extension_installed"
    cases += [
        Case(ei, "contains", (ext, {"type": "contain", "expected": "ms-python.python"})),
        Case(ei, "does not contain", (ext, {"type": "contain", "expected": "golang.go"})),
        Case(ei, "not_contain", (ext, {"type": "not_contain", "expected": "golang.go"})),
        Case(ei, "case", (ext, {"type": "contain", "expected": "MS-PYTHON.python"})),
        Case(ei, "None", (None, {"type": "contain", "expected": "x"})), Case(ei, "unknown type", (ext, {"type": "x"})),
    ]
    settings = f.json("settings.json", {"editor.fontSize": 14, "files.autoSave": "afterDelay"})
    js = "check_json_settings"
    cases += [
        Case(js, "match", (settings, {"expected": {"editor.fontSize": 14}})),
        Case(js, "mismatch", (settings, {"expected": {"editor.fontSize": 16}})),
        Case(js, "type differs", (settings, {"expected": {"editor.fontSize": "14"}})),
        Case(js, "None", (None, {"expected": {}})), Case(js, "missing file", (f.missing, {"expected": {"a": 1}})),
        Case(js, "JSON with comments", (f.text("settings_c.json", '// c\n{"a": 1}'), {"expected": {"a": 1}})),
    ]
    binding = {"key": "ctrl+j", "command": "workbench.action.togglePanel"}
    kb = "check_json_keybindings"
    cases += [
        Case(kb, "present", (f.json("kb1.json", [binding]), {"expected": binding})),
        Case(kb, "absent", (f.json("kb2.json", [{"key": "ctrl+k", "command": "x"}]), {"expected": binding})),
        Case(kb, "after a comment line", (f.text("kb3.json", "// keybindings\n" + json.dumps([binding])),
                                           {"expected": binding})),
        Case(kb, "not a list", (f.json("kb4.json", binding), {"expected": binding})),
        Case(kb, "missing file", (f.missing, {"expected": binding})), Case(kb, "None", (None, {"expected": binding})),
    ]
    return cases


GROUPS: tuple[Callable[[Files], list[Case]], ...] = (_general, _chrome, _docs, _gimp, _basic_os, _slides, _table,
                                                       _vlc, _vscode, *EXTRA_GROUPS, *OFFICE_GROUPS, *MEDIA_GROUPS)


def build_cases(root: Path) -> list[Case]:
    """Write every input file under ``root`` and return all cases."""
    files = Files(Path(root))
    return [case for group in GROUPS for case in group(files)]
