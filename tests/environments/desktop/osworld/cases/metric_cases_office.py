"""Differential cases for desktop-env's Writer, Impress and Calc metrics beyond :mod:`.metric_cases_extra`.

Same rules as :mod:`.metric_cases`: at least five cases each, on real files made here (python-docx, odfpy,
python-pptx, openpyxl), compared with desktop-env 1.0.2's function of the same name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.environments.desktop.osworld.cases.metric_inputs import OOR, Case, Files

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"


def _runs(*parts: tuple[str, dict], table: bool = False) -> Callable[[Any], None]:
    """A docx builder: one paragraph (or a one-cell table) of runs, each with python-docx font settings
    (``color`` an RGB triple, ``highlight`` a WD_COLOR_INDEX name, ``picture`` a PNG path)."""
    def build(doc: Any) -> None:
        from docx.enum.text import WD_COLOR_INDEX
        from docx.shared import Inches, RGBColor

        para = doc.add_table(rows=1, cols=1).cell(0, 0).paragraphs[0] if table else doc.add_paragraph()
        for text, fmt in parts:
            run = para.add_run(text)
            if "color" in fmt:
                run.font.color.rgb = RGBColor(*fmt["color"])
            if "highlight" in fmt:
                run.font.highlight_color = getattr(WD_COLOR_INDEX, fmt["highlight"])
            if "picture" in fmt:
                run.add_picture(fmt["picture"], width=Inches(0.5))
            if fmt.get("equation"):
                from docx.oxml import parse_xml

                run._r.append(parse_xml(f'<w:object xmlns:w="{W_NS}"/>'))
    return build


def _writer(f: Files) -> list[Case]:
    plain = f.odt("hw1.odt", [("Call the client", None), ("Say hello", None)])
    marked = f.odt("hw2.odt", [("Call the client", "#ffff00"), ("Say hello", None)])
    hw = "check_highlighted_words"
    cases = [
        Case(hw, "no highlight left", (plain, f.odt("hw3.odt", [("Call the client", "#ffff00"), ("Say hello", None)]))),
        Case(hw, "yellow highlight left", (marked, plain)),
        Case(hw, "other colour", (f.odt("hw4.odt", [("Call the client", "#00ff00"), ("Say hello", None)]), plain)),
        Case(hw, "text differs", (f.odt("hw5.odt", [("Call nobody", None)]), plain)),
        Case(hw, "None", (None, plain)), Case(hw, "missing file", (f.missing, plain)),
    ]
    records = ["08:00:00, T1, S1, 1", "08:05:00, T2, S2, 2", "08:00:00, T1, S1, 1", "not a record"]
    initial = f.docx("tr_init.docx", records)
    unique = f.docx("tr_uniq.docx", records[:2])
    nd = "check_no_duplicates"
    cases += [
        Case(nd, "duplicates removed", (initial, unique)), Case(nd, "duplicates kept", (initial, initial)),
        Case(nd, "a train lost", (initial, f.docx("tr_lost.docx", records[:1]))),
        Case(nd, "None", (initial, None)), Case(nd, "processed missing", (initial, f.missing)),
        Case(nd, "initial missing", (f.missing, unique)),
    ]
    gu = "get_unique_train_ids"
    cases += [
        Case(gu, "with duplicates", (initial,)), Case(gu, "unique", (unique,)), Case(gu, "None", (None,)),
        Case(gu, "missing file", (f.missing,)), Case(gu, "no records", (f.docx("tr_none.docx", ["a, b"]),)),
    ]
    gold = f.docx("tr_gold.docx", records[:2])
    ut = "compare_unique_train_records"
    cases += [
        Case(ut, "matches gold", (unique, [gold, initial])),
        Case(ut, "duplicates kept", (initial, [gold, initial])),
        Case(ut, "line not in initial", (f.docx("tr_new.docx", ["09:00:00, T9, S9, 9", records[1]]), [gold, initial])),
        Case(ut, "one expected file", (unique, [gold])), Case(ut, "expected not a list", (unique, gold)),
        Case(ut, "None", (None, [gold, initial])), Case(ut, "gold missing", (unique, [f.missing, initial])),
        Case(ut, "kwargs ignored", (unique, [gold, initial]), {"anything": 1}),
    ]
    pic = f.png("doc_pic.png")
    with_pic = f.docx_with("im1.docx", _runs(("see ", {}), ("", {"picture": pic})))
    ci = "compare_contains_image"
    cases += [
        Case(ci, "both have it", (with_pic, f.docx_with("im2.docx", _runs(("see ", {}), ("", {"picture": pic}))))),
        Case(ci, "image missing", (with_pic, f.docx_with("im3.docx", _runs(("see ", {}), ("", {}))))),
        Case(ci, "neither", (f.docx("im4.docx", ["a"]), f.docx("im5.docx", ["b"]))),
        Case(ci, "None", (None, with_pic)), Case(ci, "missing file", (f.missing, with_pic)),
    ]
    di = "compare_docx_images"
    other_pic = f.docx_with("im6.docx", _runs(("see ", {}), ("", {"picture": f.png("doc_pic2.png", flip=True)})))
    cases += [
        Case(di, "same image", (with_pic, f.docx_with("im7.docx", _runs(("other text", {}), ("", {"picture": pic}))))),
        Case(di, "other image", (with_pic, other_pic)),
        Case(di, "image missing", (with_pic, f.docx("im8.docx", ["a"]))),
        Case(di, "no images", (f.docx("im9.docx", ["a"]), f.docx("im10.docx", ["b"]))),
        Case(di, "None", (with_pic, None)), Case(di, "not a docx", (f.text("im11.docx", "x"), with_pic)),
    ]
    hl = "compare_highlighted_text"
    yellow = f.docx_with("hl1.docx", _runs(("keep ", {}), ("this", {"highlight": "YELLOW"})))
    cases += [
        Case(hl, "same highlights", (yellow, f.docx_with("hl2.docx", _runs(("this", {"highlight": "BRIGHT_GREEN"}))))),
        Case(hl, "other word", (yellow,
                                f.docx_with("hl3.docx", _runs(("keep", {"highlight": "YELLOW"}), (" this", {}))))),
        Case(hl, "none highlighted", (yellow, f.docx("hl4.docx", ["keep this"]))),
        Case(hl, "None", (None, yellow)), Case(hl, "missing file", (f.missing, yellow)),
    ]
    ocr = "compare_image_text"  # only the paths before OCR: MintGym leaves easyocr out (metric_loader.PLACEHOLDERS)
    cases += [
        Case(ocr, "None", (None, {"type": "text", "text": "x"})),
        Case(ocr, "empty path", ("", {"type": "text", "text": "x"})),
        Case(ocr, "missing file", (f.missing, {"type": "text", "text": "x"})),
        Case(ocr, "missing file, other rule", (f.missing, {"type": "regex"})),
        Case(ocr, "missing folder", (str(f.root / "nothing" / "here.png"), {"type": "text", "text": ""})),
    ]
    eq = "compare_insert_equation"
    with_eq = f.docx_with("eq1.docx", _runs(("x = ", {}), ("", {"equation": True})))
    cases += [
        Case(eq, "both have one", (with_eq, f.docx_with("eq2.docx", _runs(("x = ", {}), ("", {"equation": True}))))),
        Case(eq, "one missing", (with_eq, f.docx_with("eq3.docx", _runs(("x = ", {}), ("", {}))))),
        Case(eq, "text differs", (with_eq, f.docx_with("eq4.docx", _runs(("y = ", {}), ("", {"equation": True}))))),
        Case(eq, "None", (None, with_eq)), Case(eq, "missing file", (f.missing, with_eq)),
    ]
    refs = ["Intro", "References", "A. Author. Title one. 2020.", "", "B. Writer. Title two. 2021."]
    ref = f.docx("rf1.docx", refs)
    cr = "compare_references"
    cases += [
        Case(cr, "same (task options)", (ref, f.docx("rf2.docx", refs)),
             {"content_only": True, "reference_base_result": 0.6}),
        Case(cr, "close", (ref, f.docx("rf3.docx", refs[:2] + ["A. Author. Title 1. 2020.", refs[4]]))),
        Case(cr, "one reference fewer", (ref, f.docx("rf4.docx", refs[:3]))),
        Case(cr, "no reference section", (f.docx("rf5.docx", ["Intro"]), f.docx("rf6.docx", ["Other"]))),
        Case(cr, "other indicator", (ref, f.docx("rf7.docx", ["Bibliography", "x"])),
             {"reference_indicator": "Bibliography"}),
        Case(cr, "not docx", (f.text("rf8.txt", "References"), ref)), Case(cr, "None", (ref, None)),
    ]
    al = "evaluate_alignment"
    cases += [
        Case(al, "aligned", (f.docx("al1.docx", ["One two three\tfour five. Six seven eight nine."]),)),
        Case(al, "short sentences", (f.docx("al2.docx", ["Hi there. Yes."]),)),
        Case(al, "empty", (f.docx("al3.docx", []),)), Case(al, "None", (None,)), Case(al, "missing file", (f.missing,)),
    ]
    red, blue = (255, 0, 0), (0, 0, 255)
    colored = f.docx_with("cw1.docx", _runs(("apple", {"color": red}), ("boat", {"color": blue}), table=True))
    plain_words = f.docx_with("cw2.docx", _runs(("apple", {}), ("boat", {}), table=True))
    cw = "evaluate_colored_words_in_tables"
    cases += [
        Case(cw, "vowels red, others blue", (colored, plain_words)),
        Case(cw, "swapped colours", (f.docx_with("cw3.docx", _runs(("apple", {"color": blue}), ("boat", {"color": red}),
                                                               table=True)), plain_words)),
        Case(cw, "near red, threshold", (f.docx_with("cw4.docx", _runs(("apple", {"color": (250, 10, 5)}),
                                                                   ("boat", {"color": blue}), table=True)),
                                         plain_words),
             {"threshold": 10}),
        Case(cw, "text differs", (colored, f.docx("cw5.docx", ["other"]))), Case(cw, "None", (colored, None)),
        Case(cw, "no colour set", (plain_words, plain_words)),
    ]
    cv = "evaluate_conversion"
    cases += [
        Case(cv, "lower case", (f.docx("cv1.docx", ["all lower", "Mixed Case"]),)),
        Case(cv, "upper paragraph", (f.docx("cv2.docx", ["SHOUT"]),)),
        Case(cv, "upper in a table", (f.docx_with("cv3.docx", _runs(("LOUD", {}), table=True)),)),
        Case(cv, "None", (None,)), Case(cv, "missing file", (f.missing,)),
    ]

    def spaced(name: str, spacings: list[float | None]) -> str:
        def build(doc: Any) -> None:
            for i, value in enumerate(spacings):
                doc.add_paragraph(f"part {i}").paragraph_format.line_spacing = value
        return f.docx_with(name, build)

    sp = "evaluate_spacing"
    cases += [
        Case(sp, "1, 2, 1.5", (spaced("sp1.docx", [1.0, 2.0, 1.5]),)),
        Case(sp, "all single", (spaced("sp2.docx", [1.0] * 3),)),
        Case(sp, "unset", (spaced("sp3.docx", [None] * 3),)),
        Case(sp, "two paragraphs", (spaced("sp4.docx", [1.0, 2.0]),)),
        Case(sp, "None", (None,)), Case(sp, "missing file", (f.missing,)),
    ]
    return cases


def _impress(f: Files) -> list[Case]:
    ns = 'xmlns:st="uri:deskat:state.at-spi.gnome.org"'
    lp = "check_left_panel"
    cases = [
        Case(lp, "slides view open",
             (f'<desktop-frame {ns}><frame><document-frame name="Slides View"/></frame></desktop-frame>',)),
        Case(lp, "other view", (f'<desktop-frame {ns}><document-frame name="Outline"/></desktop-frame>',)),
        Case(lp, "no frames", ("<desktop-frame/>",)), Case(lp, "not XML", ("<desktop-frame",)),
        Case(lp, "None", (None,)),
    ]

    def master(colours: list[str | None], number_text: str | None = None) -> Callable[[Any], None]:
        """Slide-number placeholder of the master: a paragraph per colour (None: no colour); its text."""
        def build(prs: Any) -> None:
            from pptx.dml.color import RGBColor
            from pptx.enum.shapes import PP_PLACEHOLDER

            holder = next(p for p in prs.slide_master.placeholders
                          if p.placeholder_format.type == PP_PLACEHOLDER.SLIDE_NUMBER)
            frame = holder.text_frame
            if number_text is not None:
                frame.text = number_text
            for i, colour in enumerate(colours):
                para = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
                if colour is not None:
                    para.font.color.rgb = RGBColor.from_string(colour)
            slide = prs.slides.add_slide(prs.slide_layouts[6])
            slide.shapes.add_textbox(0, 0, 914400, 914400).text_frame.text = "3"
        return build

    pc = "check_page_number_colors"
    red = f.pptx_with("pn1.pptx", master(["D01010", "000000"]))
    cases += [
        Case(pc, "red", (red, {"color": "red"})), Case(pc, "red, blue wanted", (red, {"color": "blue"})),
        # OSWorld reads the colour from the value's second digit on ("#RRGGBB" expected): 0F0000 passes as red.
        Case(pc, "0F0000 read as red", (f.pptx_with("pn6.pptx", master(["0F0000", "000000"])), {"color": "red"})),
        Case(pc, "blue", (f.pptx_with("pn2.pptx", master(["1020E0", "000000"])), {"color": "blue"})),
        Case(pc, "green", (f.pptx_with("pn3.pptx", master(["10C020", "000000"])), {"color": "green"})),
        Case(pc, "black", (f.pptx_with("pn4.pptx", master(["101010", "FFFFFF"])), {"color": "black"})),
        Case(pc, "other colour name", (red, {"color": "purple"})),
        Case(pc, "no colours", (f.pptx("pn5.pptx", ["x"]), {"color": "red"})),
        Case(pc, "missing file", (f.missing, {"color": "red"})),
    ]

    def presenter(value: str | None) -> str:
        prop = "" if value is None else (
            f'<item oor:path="/org.openoffice.Office.Impress/Misc/Start"><prop oor:name="EnablePresenterScreen" '
            f'oor:op="fuse"><value>{value}</value></prop></item>')
        return f.text(f"pres_{value}.xcu", f'<?xml version="1.0"?><oor:items xmlns:oor="{OOR}">{prop}</oor:items>')

    pr = "check_presenter_console_disable"
    cases += [
        Case(pr, "disabled", (presenter("false"),)), Case(pr, "enabled", (presenter("true"),)),
        Case(pr, "upper case", (presenter("FALSE"),)), Case(pr, "not set", (presenter(None),)),
        Case(pr, "missing file", (f.missing,)), Case(pr, "not XML", (f.text("pres_bad.xcu", "<"),)),
    ]
    sn = "check_slide_numbers_color"
    cases += [
        Case(sn, "red numbers", (f.pptx_with("sn1.pptx", master(["FF0000"], "<number>")),)),
        Case(sn, "dark red numbers", (f.pptx_with("sn2.pptx", master(["C00000"], "<number>")),)),
        Case(sn, "placeholder not named", (f.pptx_with("sn3.pptx", master(["FF0000"])),)),
        Case(sn, "no number on slides", (f.pptx("sn4.pptx", ["Title"]),)),
        Case(sn, "missing file", (f.missing,)),
    ]

    def sized(name: str, width: int, height: int) -> str:
        def build(prs: Any) -> None:
            prs.slide_width, prs.slide_height = width, height
            prs.slides.add_slide(prs.slide_layouts[6])
        return f.pptx_with(name, build)

    po = "check_slide_orientation_Portrait"
    cases += [
        Case(po, "portrait", (sized("or1.pptx", 6858000, 9144000),)),
        Case(po, "landscape", (sized("or2.pptx", 9144000, 6858000),)),
        Case(po, "square", (sized("or3.pptx", 6858000, 6858000),)), Case(po, "missing file", (f.missing,)),
        Case(po, "not a pptx", (f.text("or4.pptx", "x"),)),
    ]

    def struck(name: str, flags: list[bool]) -> str:
        def build(prs: Any) -> None:
            slide = prs.slides.add_slide(prs.slide_layouts[6])
            frame = slide.shapes.add_textbox(0, 0, 914400, 914400).text_frame
            for i, flag in enumerate(flags):
                para = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
                run = para.add_run()
                run.text = f"item {i}"
                if flag:
                    run.font._rPr.set("strike", "sngStrike")
        return f.pptx_with(name, build)

    sk = "check_strikethrough"
    rules = {"slide_index_s": [0], "shape_index_s": [0], "paragraph_index_s": [0, 1]}
    cases += [
        Case(sk, "both struck", (struck("sk1.pptx", [True, True]), rules)),
        Case(sk, "one not", (struck("sk2.pptx", [True, False]), rules)),
        Case(sk, "only the first asked", (struck("sk3.pptx", [True, False]), {**rules, "paragraph_index_s": [0]})),
        Case(sk, "no such slide", (struck("sk4.pptx", [True]), {**rules, "slide_index_s": [3]})),
        Case(sk, "missing file", (f.missing, rules)),
    ]

    def transition(name: str, kind: str | None) -> str:
        def build(prs: Any) -> None:
            from pptx.oxml import parse_xml

            slide = prs.slides.add_slide(prs.slide_layouts[6])
            if kind is not None:
                slide._element.append(parse_xml(f'<p:transition xmlns:p="{P_NS}"><p:{kind}/></p:transition>'))
        return f.pptx_with(name, build)

    tr = "check_transition"
    dissolve = transition("tr1.pptx", "dissolve")
    cases += [
        Case(tr, "dissolve (task rules)", (dissolve, {"slide_idx": 0, "transition_type": "dissolve"})),
        Case(tr, "other transition", (transition("tr2.pptx", "fade"), {"slide_idx": 0, "transition_type": "dissolve"})),
        Case(tr, "none", (transition("tr3.pptx", None), {"slide_idx": 0, "transition_type": "dissolve"})),
        Case(tr, "no such slide", (dissolve, {"slide_idx": 4, "transition_type": "dissolve"})),
        Case(tr, "missing file", (f.missing, {"slide_idx": 0, "transition_type": "dissolve"})),
    ]

    def filled(name: str, colours: list[tuple[int, int, int] | None]) -> str:
        def build(prs: Any) -> None:
            from pptx.dml.color import RGBColor

            for colour in colours:
                slide = prs.slides.add_slide(prs.slide_layouts[6])
                if colour is not None:
                    slide.background.fill.solid()
                    slide.background.fill.fore_color.rgb = RGBColor(*colour)
        return f.pptx_with(name, build)

    fd = "evaluate_presentation_fill_to_rgb_distance"
    task = {"rgb": [0, 0, 255], "original_rgb": [255, 255, 255]}
    cases += [
        Case(fd, "blue (task rules)", (filled("fd1.pptx", [(0, 0, 255), (0, 0, 255)]), task)),
        Case(fd, "near blue", (filled("fd2.pptx", [(20, 20, 230)]), task)),
        Case(fd, "unchanged white", (filled("fd3.pptx", [(255, 255, 255)]), task)),
        Case(fd, "red, no original", (filled("fd4.pptx", [(255, 0, 0)]), {"rgb": [0, 0, 255]})),
        Case(fd, "master background", (filled("fd5.pptx", [None]), task)),
        Case(fd, "missing file", (f.missing, task)),
    ]
    return cases


def _calc(f: Files) -> list[Case]:
    def cities(name: str, values: list[str | None]) -> str:
        return f.xlsx(name, {"Sheet1": [["Year", "Name", "City"],
                                        *[[2000 + i, "Conf", v] for i, v in enumerate(values)]]})

    # OSWorld's function reads C2:C22, so a passing sheet has 21 cities.
    towns = ["Scottsdale, AZ", "Montréal", "Lille", *[f"Town {i}" for i in range(18)]]
    wanted = ["Scottsdale", ["Montreal", "Montréal"], "Lille", *[f"Town {i}" for i in range(18)]]
    cc = "compare_conference_city_in_order"
    cases = [
        Case(cc, "in order (task rule kinds)", (cities("cc1.xlsx", towns), {"expected": wanted})),
        Case(cc, "two swapped", (cities("cc2.xlsx", [towns[2], towns[1], towns[0], *towns[3:]]), {"expected": wanted})),
        Case(cc, "a row short", (cities("cc3.xlsx", towns[:-1]), {"expected": wanted})),
        Case(cc, "expected list short", (cities("cc4.xlsx", towns), {"expected": wanted[:5]})),
        Case(cc, "not a string or list", (cities("cc5.xlsx", towns), {"expected": [3, *wanted[1:]]})),
        Case(cc, "missing file", (f.missing, {"expected": wanted})),
    ]
    return cases


#: Groups of cases, in the order the table lists them.
OFFICE_GROUPS: tuple[Callable[[Files], list[Case]], ...] = (_writer, _impress, _calc)
