"""Differential cases for every OSWorld metric MintGym exposes, on real files made here.

Each metric gets at least five cases: identical inputs, clearly different ones, None, a missing file, and
whitespace/case/encoding edges, plus every option the bundled OSWorld tasks pass it. :mod:`.metric_diff`
runs them against desktop-env's functions. An ``own`` metric is compared with desktop-env's function of
the same name, or, where desktop-env 1.0.2 has none, with its structural twin (``reference``, with the
inputs renamed for it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mintgym.evals.osworld.metric_inputs import OOR, Case, Files


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
        Case(cj, "regex with flag", (data, {"expect": [{"key": ["editor", "theme"], "method": "re.I", "ref": "dark"}]})),
        Case(cj, "unexpect absent key", (data, {"unexpect": [{"key": ["nope"], "method": "eq", "ref": 1}]})),
        Case(cj, "yaml", (f.text("cj.yaml", "a:\n  b: 3\n"), {"expect": [{"key": ["a", "b"], "method": "eq", "ref": 3}]}),
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
        Case(cs, "None", (None, {"key": "a", "value": "b"})), Case(cs, "missing file", (f.missing, {"key": "a", "value": "b"})),
    ]
    img = f.png("img.png")
    il = "compare_image_list"
    cases += [
        Case(il, "identical", (img, f.png("img_copy.png"))), Case(il, "different", (img, f.png("img_dark.png", shade=0.5))),
        Case(il, "lists", ([img, img], [img, f.png("img_flip.png", flip=True)])),
        Case(il, "None in list", ([img, None], [img, img])), Case(il, "other size", (f.png("img_big.png", size=96), img)),
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
        Case(at, "three minutes", (three, {"minutes": 3})), Case(at, "ten minutes", (f.xcu("as10.xcu", "10"), {"minutes": 3})),
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
                                                                                 "method": "approx:0.1", "ref": 36}}}]}),
        Case(ct, "sheet_name", (f.xlsx("t_names.xlsx", {"Other": rows}), want), {"rules": [{"type": "sheet_name"}]}),
        Case(ct, "not a workbook", (f.text("t_bad.xlsx", "not a zip"), want), data),
    ]
    good = f.text("c_want.csv", "a,b\n1,2\n")
    cc = "compare_csv"
    cases += [
        Case(cc, "identical", (f.text("c_same.csv", "a,b\n1,2\n"), good)),
        Case(cc, "different", (f.text("c_diff.csv", "a,b\n1,3\n"), good)),
        Case(cc, "list of expected files", (f.text("c_alt.csv", "a,b\n9,9\n"), [good, f.text("c_alt2.csv", "a,b\n9,9\n")])),
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
        Case(sl, "match", (rc("v1", f"qt-slider-colours={black}"), {"type": "match", "expected_qt_slider_colours": black})),
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
        Case(rf, "non-UTF-8 file", (f.text("r5", "# caf\xe9\ninput-record-path=/home/user/Desktop\n", "latin-1"), rule)),
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
    pe = "check_play_and_exit"
    for i, (lines, expected, label) in enumerate([
            (["play-and-exit=0"], 0, "set 0"), (["play-and-exit=1"], 0, "set 1"), ([], 0, "default 0"),
            (["#play-and-exit=1"], 0, "commented line counts"), (["play-and-exit=0 "], "0", "string, spaces"),
            (["play-and-exit=1", "#play-and-exit=0"], 1, "last line wins")]):
        path = rc(f"pe{i}", *lines)
        twin = f.text(f"pe{i}.twin", Path(path).read_text().replace("play-and-exit=", "qt-minimal-view="))
        cases.append(Case(pe, label, (path, {"expected_play_and_exit": expected}), reference="check_qt_minimal_view",
                          ref_args=(twin, {"expected_qt_minimal_view": expected})))
    cases.append(Case(pe, "missing file", (f.missing, {"expected_play_and_exit": 0}), reference="check_qt_minimal_view",
                      ref_args=(f.missing, {"expected_qt_minimal_view": 0})))

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
        Case(au, "identical", (tone, f.wav("a440b.wav", 440))), Case(au, "different pitch", (tone, f.wav("a880.wav", 880))),
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


def _general_more(f: Files) -> list[Case]:
    fm = "fuzzy_match"
    cases = [
        Case(fm, "equal", ("New York", {"expected": "New York"})), Case(fm, "close", ("New Yrok", {"expected": "New York"})),
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
        Case(pp, "shebang, tabs, blank lines", (f.text("u2.py", "#!/usr/bin/env python\ndef f(x):\n\n\treturn x + 1  \n"), py)),
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
        Case(et, "same tabs", (tabs, {"type": "url", "urls": ["https://www.example.com/", "https://docs.python.org/3/"]})),
        Case(et, "one tab differs", (tabs, {"type": "url", "urls": ["https://www.example.com/", "https://pypi.org/"]})),
        Case(et, "None", (None, {"type": "url", "urls": []})), Case(et, "unknown type", (tabs, {"type": "title"})),
        Case(et, "trailing slash", ([{"url": "https://www.example.com"}], {"type": "url", "urls": ["https://www.example.com/"]})),
    ]
    marks = {"bookmark_bar": {"children": [
        {"type": "folder", "name": "Liked Authors", "children": [{"type": "url", "url": "https://a.example/"},
                                                                 {"type": "url", "url": "https://b.example/"}]},
        {"type": "url", "name": "News", "url": "https://news.example/"}]}}
    eb = "is_expected_bookmarks"
    cases += [
        Case(eb, "folder names", (marks, {"type": "bookmark_bar_folders_names", "names": ["Liked Authors"]})),
        Case(eb, "website urls differ", (marks, {"type": "bookmark_bar_websites_urls", "urls": ["https://x.example/"]})),
        Case(eb, "liked authors, alternatives", (marks, {"type": "liked_authors_websites_urls",
                                                        "urls": [["https://a.example/", "https://c.example/"],
                                                                 "https://b.example/"]})),
        Case(eb, "None", (None, {"type": "bookmark_bar_folders_names", "names": []})),
        Case(eb, "unknown type", (marks, {"type": "other"})),
    ]
    sq = "is_expected_search_query"
    cases += [
        Case(sq, "pattern found", ({"url": "https://www.google.com/search?q=weather"}, {"expect": {"pattern": "q=weather"}})),
        Case(sq, "pattern absent", ({"url": "https://www.google.com/"}, {"expect": {"pattern": "q="}})),
        Case(sq, "None", (None, {"expect": {"pattern": "x"}})), Case(sq, "no url", ({"title": "x"}, {"expect": {"pattern": "x"}})),
        Case(sq, "case", ({"url": "https://x/?q=Weather"}, {"expect": {"pattern": "weather"}})),
    ]
    history = [("https://www.amazon.com/cart", "Cart", 3), ("https://news.example/", "News", 1)]
    hd = "check_history_deleted"
    cases += [
        Case(hd, "still there", (history, {"type": "keywords", "keywords": ["amazon"]})),
        Case(hd, "deleted", (history, {"type": "keywords", "keywords": ["ebay"]})),
        Case(hd, "empty history", ([], {"type": "keywords", "keywords": ["amazon"]})),
        Case(hd, "None", (None, {"type": "keywords", "keywords": ["a"]})), Case(hd, "unknown type", (history, {"type": "x"})),
        Case(hd, "case", (history, {"type": "keywords", "keywords": ["Amazon"]})),
    ]
    ee = "check_enabled_experiments"
    cases += [
        Case(ee, "same names", (["smooth-scrolling@1", "dark-mode@2"], {"type": "names", "names": ["smooth-scrolling", "dark-mode"]})),
        Case(ee, "other order", (["dark-mode@2", "smooth-scrolling@1"], {"type": "names", "names": ["smooth-scrolling", "dark-mode"]})),
        Case(ee, "none enabled", ([], {"type": "names", "names": []})), Case(ee, "None", (None, {"type": "names", "names": []})),
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
        Case(pg, "eq", (three, {"relation": "eq", "ref_value": 3})), Case(pg, "lt fails", (three, {"relation": "lt", "ref_value": 3})),
        Case(pg, "ge", (three, {"relation": "ge", "ref_value": 2})), Case(pg, "None", (None, {"relation": "eq", "ref_value": 0})),
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
        Case(fn, "all Arial", (arial, {"font_name": "Arial"})), Case(fn, "other font", (arial, {"font_name": "Times New Roman"})),
        Case(fn, "one run differs", (f.docx_with("fn2.docx", runs(("a", {"name": "Arial"}), ("b", {"name": "Courier"}))),
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
        Case(pb, "count differs", (broken, {"page_break_count": 2})), Case(pb, "no break", (f.docx("pb2.docx", ["a"]), {})),
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
        Case(it, "italic at 12", (f.docx_with("it3.docx", runs(("plain ", {}), ("slanted", {"italic": True, "size": 12}))),
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
        Case(df, "font set", (font, {"font_name": "Liberation Serif"})), Case(df, "other font", (font, {"font_name": "Arial"})),
        Case(df, "not set", (f.xcu("font2.xcu", "3"), {"font_name": "Arial"})), Case(df, "None", (None, {"font_name": "x"})),
        Case(df, "missing file", (f.missing, {"font_name": "x"})),
    ]
    (f.root / "exists").mkdir(exist_ok=True)
    (f.root / "exists" / "out.png").write_bytes(b"x")
    fe = "check_file_exists"
    cases += [
        Case(fe, "present", (str(f.root / "exists"), "out.png")), Case(fe, "absent", (str(f.root / "exists"), "in.png")),
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
        Case(hc, "missing file", (f.missing, html)), Case(hc, "whitespace", (html, f.text("h6.html", page.replace("<b>", " <b>")))),
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
                            f'oor:path="/org.openoffice.Setup/L10N">{prop}</item><item oor:path="/org.openoffice.Setup/L10N">'
                            f'<prop oor:name="ooLocale"><value>{ui}</value></prop></item></oor:items>')

    lc = "check_libre_locale"
    cases += [
        Case(lc, "setup locale matches", (locale("l1.xcu", "de-DE", "en-US"), {"locale_set": ["de-*"]})),
        Case(lc, "falls back to ooLocale", (locale("l2.xcu", None, "fr-FR"), {"locale_set": ["fr-FR"]})),
        Case(lc, "no match", (locale("l3.xcu", "de-DE", "en-US"), {"locale_set": ["en-*"]})),
        Case(lc, "case", (locale("l4.xcu", "de-DE", "x"), {"locale_set": ["DE-de"]})),
        Case(lc, "missing file", (f.missing, {"locale_set": ["x"]})), Case(lc, "not XML", (f.text("l5.xcu", "<"), {"locale_set": []})),
    ]
    prefs = f.text("prefs.js", '// Mozilla User Preferences\nuser_pref("mail.spellcheck.inline", false);\n'
                               'user_pref("mailnews.default_sort_order", 2);\nuser_pref("mail.identity.id1.fullName", "Ada L");\n')
    tp = "check_thunderbird_prefs"
    cases += [
        Case(tp, "expected values", (prefs, {"expect": {"mail.spellcheck.inline": {"method": "eq", "ref": False},
                                                        "mailnews.default_sort_order": {"method": "eq", "ref": 2}}})),
        Case(tp, "value differs", (prefs, {"expect": {"mailnews.default_sort_order": {"method": "eq", "ref": 1}}})),
        Case(tp, "key absent", (prefs, {"expect": {"mail.other": {"method": "eq", "ref": 1}}})),
        Case(tp, "unexpected value present", (prefs, {"unexpect": {"mail.identity.id1.fullName": {"method": "re", "ref": "Ada"}}})),
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


GROUPS: tuple[Callable[[Files], list[Case]], ...] = (_general, _chrome, _docs, _gimp, _basic_os, _slides, _table,
                                                       _vlc, _vscode, _general_more, _chrome_more, _os_more, _vlc_more,
                                                       _images_more, _docs_more, _files_more)


def build_cases(root: Path) -> list[Case]:
    """Write every input file under ``root`` and return all cases."""
    files = Files(Path(root))
    return [case for group in GROUPS for case in group(files)]
