"""Differential cases for desktop-env's image, audio, video, archive, browser, mail and code metrics beyond
:mod:`.metric_cases_extra`.

Same rules as :mod:`.metric_cases`: at least five cases each, on real files made here (Pillow, PyMuPDF,
OpenCV, mutagen, zip/tar), compared with desktop-env 1.0.2's function of the same name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.environments.desktop.osworld.cases.metric_inputs import Case, Files


def _variant(f: Files, name: str, source: str, change: Callable[[Any], Any]) -> str:
    """``source`` (an image file) changed by ``change(PIL image) -> image``, saved as ``name``."""
    from PIL import Image

    change(Image.open(source).convert("RGB")).save(f.root / name)
    return f.path(name)


def _enhance(kind: str, factor: float) -> Callable[[Any], Any]:
    from PIL import ImageEnhance

    return lambda img: getattr(ImageEnhance, kind)(img).enhance(factor)


def _gimp(f: Files) -> list[Case]:
    from PIL import Image, ImageFilter

    img = f.png("g_img.png", size=64)
    flipped = f.png("g_flip.png", size=64, flip=True)
    ct = "check_contrast_increase_and_structure_sim"
    cases = [
        Case(ct, "more contrast", (_variant(f, "g_c15.png", img, _enhance("Contrast", 1.5)), img)),
        Case(ct, "less contrast", (_variant(f, "g_c05.png", img, _enhance("Contrast", 0.5)), img)),
        Case(ct, "unchanged", (img, img)),
        Case(ct, "more contrast, other picture", (_variant(f, "g_cf.png", flipped, _enhance("Contrast", 1.5)), img)),
        Case(ct, "None", (None, img)), Case(ct, "missing file", (f.missing, img)),
    ]
    fe = "check_file_exists_and_structure_sim"
    cases += [
        Case(fe, "exported", (f.png("g_copy.png", size=64), img)), Case(fe, "not exported", (f.missing, img)),
        Case(fe, "other picture", (flipped, img)), Case(fe, "other size", (f.png("g_big.png", size=96), img)),
        Case(fe, "None", (img, None)), Case(fe, "tiny images", (f.png("g_t1.png", size=5), f.png("g_t2.png", size=5))),
    ]

    def subject(draw: Any) -> None:
        draw.ellipse((16, 16, 48, 48), fill=(0, 0, 0))

    mask = f.image("g_mask.png", subject, colour=(200, 200, 200))
    gb = "check_green_background"
    cases += [
        Case(gb, "green background", (f.image("g_green.png", subject, colour=(20, 200, 30)), mask)),
        Case(gb, "blue background", (f.image("g_blue.png", subject, colour=(20, 30, 200)), mask)),
        Case(gb, "green around the subject only",
             (f.image("g_part.png", lambda d: d.rectangle((0, 0, 8, 63), fill=(255, 0, 0)),
                                                           colour=(20, 200, 30)), mask)),
        Case(gb, "None", (None, mask)), Case(gb, "missing file", (f.missing, mask)),
        Case(gb, "all black target", (img, f.image("g_black.png", lambda d: None, colour=(0, 0, 0)))),
    ]
    fs = "check_image_file_size"
    cases += [
        Case(fs, "under the limit (task rule)", (img, {"max_size": 600000})),
        Case(fs, "over the limit", (img, {"max_size": 100})),
        Case(fs, "exactly the size", (img, {"max_size": __import__("os").path.getsize(img)})),
        Case(fs, "None", (None, {"max_size": 1})), Case(fs, "missing file", (f.missing, {"max_size": 1})),
    ]
    Image.open(img).convert("P", palette=Image.Palette.ADAPTIVE).save(f.root / "g_pal.png")
    palette = f.path("g_pal.png")
    pl = "check_palette_and_structure_sim"
    cases += [
        Case(pl, "indexed colour", (palette, img)), Case(pl, "still RGB", (img, img)),
        Case(pl, "indexed, other picture", (palette, flipped)), Case(pl, "None", (palette, None)),
        Case(pl, "missing file", (f.missing, img)), Case(pl, "empty file", (f.text("g_empty.png", ""), img)),
    ]
    blurred = _variant(f, "g_blur.png", img, lambda im: im.filter(ImageFilter.GaussianBlur(2)))
    sharp = _variant(f, "g_sharp.png", img, lambda im: im.filter(ImageFilter.SHARPEN))
    sh = "check_sharper"
    cases += [
        Case(sh, "sharpened", (sharp, img)), Case(sh, "blurred", (blurred, img)), Case(sh, "unchanged", (img, img)),
        Case(sh, "sharp vs blurred", (sharp, blurred)), Case(sh, "missing file", (f.missing, img)),
    ]
    half = _variant(f, "g_half.png", img, lambda im: im.resize((32, 32)))
    rgba = Image.new("RGBA", (80, 80), (0, 0, 0, 0))
    rgba.paste(Image.open(img).convert("RGBA"), (8, 8))
    rgba.save(f.root / "g_rgba.png")
    rs = "check_structure_sim_resized"
    cases += [
        Case(rs, "resized", (half, img)), Case(rs, "resized, other picture", (half, flipped)),
        Case(rs, "transparent border", (f.path("g_rgba.png"), img)),
        Case(rs, "fully transparent", (f.image("g_clear.png", lambda d: None, mode="RGBA", colour=(0, 0, 0, 0)), img)),
        Case(rs, "None", (None, img)), Case(rs, "missing file", (f.missing, img)),
    ]
    st = "check_structure_sim_with_threshold"  # newer than desktop-env 1.0.2: OSWorld's repository is the reference
    task = {"ssim_threshold": 0.85}
    cases += [Case(st, label, args, kwargs, official="gimp") for label, args, kwargs in [
        ("same picture (task option)", (f.png("g_st1.png", size=64), img), task),
        ("resized", (half, img), task), ("other picture", (flipped, img), task),
        ("other picture, low threshold", (flipped, img), {"ssim_threshold": -1.0}),
        ("default threshold", (_variant(f, "g_st2.png", img, _enhance("Brightness", 0.9)), img), {}),
        ("tiny images", (f.png("g_st3.png", size=4), f.png("g_st4.png", size=4)), task),
        ("None", (None, img), task), ("missing file", (f.missing, img), task),
        ("not an image", (f.text("g_st5.png", "x"), img), task)]]
    tl = "check_textbox_on_leftside"
    cases += [
        Case(tl, "text at the left", (f.image("g_tl1.png", lambda d: d.rectangle((1, 20, 30, 28), fill=(0, 0, 0))),)),
        Case(tl, "text in the middle",
             (f.image("g_tl2.png", lambda d: d.rectangle((20, 20, 50, 28), fill=(0, 0, 0))),)),
        Case(tl, "no text", (f.image("g_tl3.png", lambda d: None),)), Case(tl, "None", (None,)),
        Case(tl, "missing file", (f.missing,)),
    ]

    def triangle(name: str, centre: tuple[int, int], colour: tuple[int, int, int] = (250, 220, 0)) -> str:
        x, y = centre
        return f.image(name, lambda d: d.polygon([(x - 8, y + 6), (x + 8, y + 6), (x, y - 8)], fill=colour),
                       colour=(40, 40, 40))

    middle, corner = triangle("g_tri_mid.png", (32, 32)), triangle("g_tri_corner.png", (10, 10))
    tp = "check_triangle_position"
    cases += [
        Case(tp, "in the middle", (middle,)), Case(tp, "in a corner", (corner,)),
        Case(tp, "one colour only", (f.image("g_plain.png", lambda d: None),)), Case(tp, "None", (None,)),
        Case(tp, "missing file", (f.missing,)),
    ]
    tc = "compare_triangle_positions"
    cases += [
        Case(tc, "corner vs middle", (corner, middle)), Case(tc, "middle vs corner", (middle, corner)),
        Case(tc, "same", (middle, middle)), Case(tc, "other size", (f.png("g_tri_big.png", size=96), middle)),
        Case(tc, "missing file", (f.missing, middle)),
    ]
    dark = _variant(f, "g_dark.png", img, _enhance("Brightness", 0.6))
    db = "decrease_brightness"
    cases += [
        Case(db, "original brighter", (img, dark)), Case(db, "original darker", (dark, img)),
        Case(db, "same", (img, img)),
        Case(db, "missing file", (f.missing, img)), Case(db, "not an image", (f.text("g_bad.png", "x"), img)),
    ]
    vivid = _variant(f, "g_vivid.png", img, _enhance("Color", 1.8))
    sat = "increase_saturation"
    cases += [
        Case(sat, "more saturated", (img, vivid)), Case(sat, "less saturated", (vivid, img)),
        Case(sat, "same", (img, img)),
        Case(sat, "missing file", (img, f.missing)), Case(sat, "grey images", (f.image("g_grey1.png", lambda d: None),
                                                                               f.image("g_grey2.png", lambda d: None))),
    ]
    return cases


def _chrome(f: Files) -> list[Case]:
    import pymupdf

    def pdf_with(name: str, pictures: list[str]) -> str:
        doc = pymupdf.open()
        page = doc.new_page()
        page.insert_text((72, 72), "Receipt")
        for i, picture in enumerate(pictures):
            page.insert_image(pymupdf.Rect(72, 100 + 120 * i, 172, 200 + 120 * i), filename=picture)
        doc.save(f.root / name)
        doc.close()
        return f.path(name)

    pic, flipped = f.png("c_pic.png", size=64), f.png("c_flip.png", size=64, flip=True)
    gold = pdf_with("c_gold.pdf", [pic])
    pi = "compare_pdf_images"
    cases = [
        Case(pi, "same image", (pdf_with("c_same.pdf", [pic]), gold)),
        Case(pi, "other image", (pdf_with("c_other.pdf", [flipped]), gold)),
        Case(pi, "one image more", (pdf_with("c_two.pdf", [pic, pic]), gold)),
        Case(pi, "no images", (pdf_with("c_none.pdf", []), pdf_with("c_none2.pdf", []))),
        Case(pi, "None", (None, gold)), Case(pi, "missing file", (f.missing, gold)),
        Case(pi, "not a PDF", (f.text("c_bad.pdf", "x"), gold)),
    ]
    sc = "is_added_to_steam_cart"
    page = {"title": "Cart", "url": "https://store.steampowered.com/cart/",
            "content": "Your cart: The Dota 2 Official Soundtrack  $9.99"}
    cases += [
        Case(sc, "item in the cart (task rule)", (page, {"items": ["The Dota 2 Official Soundtrack"]})),
        Case(sc, "one item missing", (page, {"items": ["The Dota 2 Official Soundtrack", "Portal 2"]})),
        Case(sc, "no items asked", (page, {"items": []})), Case(sc, "case", (page, {"items": ["the dota 2"]})),
        Case(sc, "None page", (None, {"items": ["x"]})),
    ]
    ap = "is_expected_active_tab_approximate"
    rule = {"type": "url", "url": "chrome://password-manager/passwords"}
    cases += [
        Case(ap, "same url (task rule)", ({"url": "chrome://password-manager/passwords"}, rule)),
        Case(ap, "query ignored", ("chrome://password-manager/passwords?q=mail", rule)),
        Case(ap, "other page", ({"url": "chrome://settings/"}, rule)), Case(ap, "None", (None, rule)),
        Case(ap, "unknown type", ({"url": "x"}, {"type": "title"})),
    ]
    ie = "is_expected_installed_extensions"
    installed = ["Google Translate", "Momentum", "React Developer Tools"]
    cases += [
        Case(ie, "all installed", (installed, {"expected": ["Momentum", "Google Translate"]})),
        Case(ie, "one missing", (installed, {"expected": ["Momentum", "Zoom for Google Chrome"]})),
        Case(ie, "nothing expected", (installed, {"expected": []})), Case(ie, "none installed", ([], {"expected": []})),
        Case(ie, "case", (installed, {"expected": ["momentum"]})),
    ]
    return cases


def _archives(f: Files) -> list[Case]:
    text = {"a.txt": b"alpha\n", "b.txt": b"beta\n"}
    gold = f.zip("ar_gold.zip", text)
    ca = "compare_archive"
    one, two = f.pdf("ar1.pdf", ["Lecture one"]), f.pdf("ar2.pdf", ["Lecture two"])
    pdfs = {f"slides/{n}": Path(p).read_bytes() for n, p in (("1.pdf", one), ("2.pdf", two))}
    pdf_gold = f.zip("ar_pdf_gold.zip", pdfs)
    cases = [
        Case(ca, "same text files", (f.zip("ar_same.zip", text), gold)),
        Case(ca, "one file differs", (f.zip("ar_diff.zip", {**text, "b.txt": b"gamma\n"}), gold)),
        Case(ca, "other names", (f.zip("ar_names.zip", {"a.txt": b"alpha\n", "c.txt": b"beta\n"}), gold)),
        Case(ca, "tar.gz vs zip", (f.tar("ar_tar.tar.gz", text), gold)),
        Case(ca, "pdfs in a folder (task options)", (f.zip("ar_pdf.zip", pdfs), pdf_gold),
             {"file_path": "slides", "file_type": "pdf"}),
        Case(ca, "pdf differs", (f.zip("ar_pdf2.zip", {**pdfs, "slides/2.pdf": Path(one).read_bytes()}), pdf_gold),
             {"file_path": "slides", "file_type": "pdf"}),
        Case(ca, "None", (None, gold)),
        Case(ca, "unknown file type", (f.zip("ar_x.zip", text), gold), {"file_type": "model"}),
        Case(ca, "not an archive", (f.text("ar_bad.zip", "x"), gold)),
    ]
    book = {"c1": "It was a dark night.", "c2": "The end."}
    ep_gold = f.epub("ep_gold.epub", book)
    ep = "compare_epub"
    cases += [
        Case(ep, "same book, other identifier", (f.epub("ep_same.epub", book, identifier="urn:uuid:2"), ep_gold)),
        Case(ep, "one chapter differs", (f.epub("ep_diff.epub", {**book, "c2": "Not the end."}), ep_gold)),
        Case(ep, "chapter missing", (f.epub("ep_short.epub", {"c1": book["c1"]}), ep_gold)),
        Case(ep, "not a zip", (f.text("ep_bad.epub", "x"), ep_gold)), Case(ep, "None", (None, ep_gold)),
        Case(ep, "missing file", (f.missing, ep_gold)),
    ]
    return cases


def _sound_and_video(f: Files) -> list[Case]:
    song = f.mp3("Cheng Xiang - Missing You.mp3", {"title": "Missing You", "artist": "Cheng Xiang"})
    mm = "check_mp3_meta"
    task = {"title": {"method": "eq", "ref": "Missing You"}, "artist": {"method": "eq", "ref": "Cheng Xiang"}}
    cases = [
        Case(mm, "tags set (task rules)", (song, task)),
        Case(mm, "artist differs", (song, {**task, "artist": {"method": "eq", "ref": "Zhou Xuan"}})),
        Case(mm, "no tags", (f.mp3("untagged.mp3", {}), task)),
        Case(mm, "regex rule", (song, {"title": {"method": "re", "ref": "^Missing"}})),
        Case(mm, "None", (None, task)), Case(mm, "missing file", (f.missing, task)),
    ]
    shades = [30, 60, 90, 120, 150, 180]
    clip = f.video("v_clip.avi", shades, moving=True)
    cv = "compare_videos"
    cases += [
        Case(cv, "same video", (clip, f.video("v_same.avi", shades, moving=True))),
        Case(cv, "one frame shorter", (clip, f.video("v_short.avi", shades[:-1], moving=True))),
        Case(cv, "other picture", (clip, f.video("v_other.avi", [200 - s for s in shades], size=(64, 48)))),
        Case(cv, "few frames checked", (clip, f.video("v_short2.avi", shades[:-1], moving=True)),
             {"max_frames_to_check": 3}),
        Case(cv, "strict threshold", (clip, f.video("v_still.avi", shades)), {"threshold": 0}),
        Case(cv, "missing file", (f.missing, clip)), Case(cv, "both missing", (f.missing, f.missing)),
    ]
    return cases


def _general(f: Files) -> list[Case]:
    ts = "compare_time_in_speedtest_results"
    results = f.text("speed.csv", "Server,Date,Download\nx,2024-01-25 12:56,100\n")
    cases = [  # OSWorld compares with the clock: only limits that hold at any time of day are used
        Case(ts, "any time within a day", (results, 1441)), Case(ts, "zero minutes", (results, 0)),
        Case(ts, "limit as text", (results, "1441")),
        Case(ts, "one line only", (f.text("speed1.csv", "Server,Date\n"), 1441)),
        Case(ts, "None", (None, 10)), Case(ts, "missing file", (f.missing, 1441)),
        Case(ts, "not a time", (f.text("speed2.csv", "a,b\nx,noon\n"), 1441)),
    ]
    places = ["Main Street 5", "Harbour Road 12", "Hill Lane 3"]
    pm = "fuzzy_place_math"
    one_each = f.docx("pm1.docx", ["MainStreet5", "HarbourRoad12", "HillLane3"])
    cases += [
        Case(pm, "three places", (one_each, {"expected": ["MainStreet5", "HarbourRoad12", "HillLane3"]})),
        Case(pm, "close spellings", (f.docx("pm2.docx", ["MainStret5", "HarbourRoad12", "HilLane3"]),
                                     {"expected": ["MainStreet5", "HarbourRoad12", "HillLane3"]})),
        Case(pm, "words split", (f.docx("pm3.docx", places), {"expected": places})),
        Case(pm, "two places", (f.docx("pm4.docx", ["MainStreet5", "HillLane3"]), {"expected": ["MainStreet5"]})),
        Case(pm, "None", (None, {"expected": []})), Case(pm, "missing file", (f.missing, {"expected": []})),
    ]
    pdf = f.pdf("inv.pdf", ["Invoice 42 total 19.99 EUR"])
    gt = "is_gold_text_included_in_pdf"
    cases += [
        Case(gt, "all values", (pdf, f.json("inv1.json", {"number": "42", "total": "19.99"}))),
        Case(gt, "one value missing", (pdf, f.json("inv2.json", {"number": "43"}))),
        Case(gt, "empty gold", (pdf, f.json("inv3.json", {}))), Case(gt, "None", (pdf, None)),
        Case(gt, "missing pdf", (f.missing, f.json("inv4.json", {"a": "b"}))),
    ]
    return cases


def _mail_and_code(f: Files) -> list[Case]:
    def rules(name: str, *filters: dict[str, str]) -> str:
        lines = ['version="9"', 'logging="no"']
        for flt in filters:
            lines += [f'name="{flt["name"]}"', f'enabled="{flt.get("enabled", "yes")}"', 'type="17"',
                      f'action="{flt["action"]}"', f'actionValue="{flt["value"]}"', f'condition="{flt["condition"]}"']
        return f.text(name, "\n".join(lines) + "\n")

    promo = {"name": "Promo", "action": "Move to folder", "value": "mailbox://nobody@Local%20Folders/Promotions",
             "condition": 'AND (subject,contains,discount)'}
    want = {"expect": [{"enabled": "yes", "action": "Move to folder",
                        "actionValue": "mailbox://nobody@Local%20Folders/Promotions",
                        "condition": ["AND (subject,contains,discount)"]}]}
    tf = "check_thunderbird_filter"
    cases = [
        Case(tf, "filter present (task rule)", (rules("mf1.dat", promo), want)),
        Case(tf, "disabled", (rules("mf2.dat", {**promo, "name": "Off", "enabled": "no"}), want)),
        Case(tf, "other condition", (rules("mf3.dat",
                                           {**promo, "name": "Other", "condition": "AND (from,contains,shop)"}), want)),
        Case(tf, "unexpected filter present", (rules("mf4.dat", promo), {"unexpect": [{"name": "Promo"}]})),
        Case(tf, "forward to all (task rule)",
             (rules("mf5.dat", {"name": "Fwd", "action": "Forward", "value": "anonym-x2024@gmail.com",
                                                      "condition": "ALL"}),
                                               {"expect": [{"enabled": "yes", "action": "Forward",
                                                            "actionValue": "anonym-x2024@gmail.com",
                                                            "condition": ["ALL"]}]})),
        Case(tf, "no filters", (rules("mf6.dat"), want)), Case(tf, "None", (None, want)),
        Case(tf, "missing file", (f.missing, want)),
    ]
    page = "<html><head><style>body { background-image: url('bg.png'); }</style></head><body></body></html>"
    hb = "check_html_background_image"
    cases += [
        Case(hb, "set", (f.text("bg1.html", page), {"value": "bg.png"})),
        Case(hb, "other image", (f.text("bg2.html", page), {"value": "other.png"})),
        Case(hb, "double quotes", (f.text("bg3.html", page.replace("'", '"')), {"value": "bg.png"})),
        Case(hb, "no style", (f.text("bg4.html", "<html></html>"), {"value": "bg.png"})),
        Case(hb, "None", (None, {"value": "x"})), Case(hb, "missing file", (f.missing, {"value": "x"})),
    ]
    gf = "check_python_file_by_gold_file"  # desktop-env 1.0.2's body is `pass`
    code = f.text("gf.py", "print(1)\n")
    cases += [Case(gf, "same file", (code, code)), Case(gf, "list", ([code], code)), Case(gf, "None", (None, None)),
              Case(gf, "missing file", (f.missing, code)), Case(gf, "options", (code, code), {"x": 1})]
    (f.root / "snake").mkdir(exist_ok=True)
    f.text("snake/snake.py", "def grow(n):\n    return n + 1\n")

    def suite(name: str, body: str) -> str:
        return f.text(f"snake/{name}", "from snake import grow\n\n" + body)

    ps = "check_python_file_by_test_suite"
    files = [f.path("snake/snake.py")]
    cases += [
        Case(ps, "test passes", (files, suite("t_pass.py", "def test():\n    return grow(1) == 2\n"))),
        Case(ps, "test fails", (files, suite("t_fail.py", "def test():\n    return grow(1) == 3\n"))),
        Case(ps, "partial score", (files, suite("t_half.py", "def test():\n    return 0.5\n"))),
        Case(ps, "score above 1", (files, suite("t_big.py", "def test():\n    return 7\n"))),
        Case(ps, "test raises", (files, suite("t_raise.py", "def test():\n    raise RuntimeError('x')\n"))),
        Case(ps, "other function name", (files, suite("t_name.py", "def check():\n    return True\n")),
             {"test_function_name": "check"}),
        Case(ps, "no test function", (files, suite("t_none.py", "x = 1\n"))),
        Case(ps, "syntax error", (files, suite("t_syntax.py", "def test(:\n"))),
        Case(ps, "import fails", (files,
                                  f.text("snake/t_import.py",
                                         "import no_such_module_xyz\ndef test():\n    return 1\n"))),
        Case(ps, "missing test file", (files, f.missing)), Case(ps, "None test file", (files, None)),
        Case(ps, "returns text", (files, suite("t_text.py", "def test():\n    return 'yes'\n"))),
    ]
    rf = "compare_result_files"
    gold = f.text("gold_result.txt", "42.0\n")
    cases += [
        Case(rf, "same number", (f.text("r1.txt", "42.0"), gold)),
        Case(rf, "close number", (f.text("r2.txt", "42.00001"), gold)),
        Case(rf, "number in a sentence", (f.text("r3.txt", "The answer is 42.0"), gold)),
        Case(rf, "other number", (f.text("r4.txt", "41"), gold)),
        Case(rf, "same text", (f.text("r5.txt", "done\n"), f.text("r6.txt", "done"))),
        Case(rf, "other text", (f.text("r7.txt", "done"), f.text("r8.txt", "not done"))),
        Case(rf, "None", (None, gold)), Case(rf, "missing file", (f.missing, gold)),
    ]
    return cases


#: Groups of cases, in the order the table lists them.
MEDIA_GROUPS: tuple[Callable[[Files], list[Case]], ...] = (_gimp, _chrome, _archives, _sound_and_video, _general,
                                                           _mail_and_code)
