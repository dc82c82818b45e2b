"""Inputs for the differential metric cases: the :class:`Case` record and real files written on the spot
(xlsx, docx, pptx, pdf, png, wav, xcu, vlcrc, json, csv, txt)."""

from __future__ import annotations

import json
import math
import struct
import wave
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OOR = "http://openoffice.org/2001/registry"


@dataclass(frozen=True)
class Case:
    metric: str
    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    #: desktop-env function to compare with when it is not ``metric`` (own metrics without a namesake).
    reference: str | None = None
    ref_args: tuple | None = None
    ref_kwargs: dict | None = None


class Files:
    """Writes test inputs under one folder and returns their paths as strings."""

    def __init__(self, root: Path):
        self.root = root
        self.missing = str(root / "no-such-dir" / "missing.file")

    def path(self, name: str) -> str:
        return str(self.root / name)

    def text(self, name: str, content: str, encoding: str = "utf-8") -> str:
        (self.root / name).write_bytes(content.encode(encoding))
        return self.path(name)

    def json(self, name: str, data: Any) -> str:
        return self.text(name, json.dumps(data))

    def xlsx(self, name: str, sheets: dict[str, list[list[Any]]]) -> str:
        from openpyxl import Workbook

        book = Workbook()
        book.remove(book.active)
        for title, rows in sheets.items():
            sheet = book.create_sheet(title)
            for row in rows:
                sheet.append(row)
        book.save(self.root / name)
        return self.path(name)

    def docx(self, name: str, paragraphs: list[str], spacing: float | None = None,
             tabs: list[tuple[float, str]] | None = None) -> str:
        from docx import Document
        from docx.enum.text import WD_TAB_ALIGNMENT
        from docx.shared import Inches

        doc = Document()
        for text in paragraphs:
            para = doc.add_paragraph(text)
            if spacing is not None:
                para.paragraph_format.line_spacing = spacing
            for position, align in tabs or []:
                para.paragraph_format.tab_stops.add_tab_stop(Inches(position), getattr(WD_TAB_ALIGNMENT, align))
        doc.save(self.root / name)
        return self.path(name)

    def docx_with(self, name: str, build: Callable[[Any], None]) -> str:
        """A docx made by ``build(document)`` (python-docx), for formatting the plain builder does not cover."""
        from docx import Document

        doc = Document()
        build(doc)
        doc.save(self.root / name)
        return self.path(name)

    def zip(self, name: str, members: dict[str, bytes]) -> str:
        with zipfile.ZipFile(self.root / name, "w") as archive:
            for member, data in members.items():
                archive.writestr(member, data)
        return self.path(name)

    def pptx(self, name: str, texts: list[str], picture: str | None = None, stretch: bool = False) -> str:
        from pptx import Presentation
        from pptx.util import Inches, Pt

        prs = Presentation()
        for text in texts:
            slide = prs.slides.add_slide(prs.slide_layouts[6])
            box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(1))
            box.text_frame.text = text
            box.text_frame.paragraphs[0].runs[0].font.size = Pt(24)
            if picture:
                if stretch:
                    slide.shapes.add_picture(picture, 0, 0, prs.slide_width, prs.slide_height)
                else:
                    slide.shapes.add_picture(picture, Inches(2), Inches(2), Inches(2), Inches(2))
        prs.save(self.root / name)
        return self.path(name)

    def pdf(self, name: str, pages: list[str]) -> str:
        import pymupdf

        doc = pymupdf.open()
        for text in pages:
            doc.new_page().insert_text((72, 72), text)
        doc.save(self.root / name)
        doc.close()
        return self.path(name)

    def png(self, name: str, size: int = 48, shade: float = 1.0, saturation: float = 1.0,
            flip: bool = False) -> str:
        from PIL import Image, ImageEnhance

        img = Image.new("RGB", (size, size))
        img.putdata([(int(200 * x / size) + 20, 40 + (y * 3) % 120, 180 - int(150 * y / size))
                     for y in range(size) for x in range(size)])
        for x in range(size // 4, size // 2):
            for y in range(size // 4, size // 2):
                img.putpixel((x, y), (230, 30, 30))
        if flip:
            img = img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
        img = ImageEnhance.Brightness(img).enhance(shade)
        img = ImageEnhance.Color(img).enhance(saturation)
        img.save(self.root / name)
        return self.path(name)

    def wav(self, name: str, freq: float, seconds: float = 0.4, rate: int = 16000) -> str:
        with wave.open(str(self.root / name), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(rate)
            frames = int(seconds * rate)
            out.writeframes(b"".join(struct.pack("<h", int(12000 * math.sin(2 * math.pi * freq * i / rate)))
                                     for i in range(frames)))
        return self.path(name)

    def xcu(self, name: str, minutes: str | None) -> str:
        item = "" if minutes is None else (
            f'<item oor:path="/org.openoffice.Office.Common/Save/Document">'
            f'<prop oor:name="AutoSaveTimeIntervall" oor:op="fuse"><value>{minutes}</value></prop></item>')
        return self.text(name, f'<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="{OOR}">'
                               f'<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="X">'
                               f'<value>1</value></prop></item>{item}</oor:items>\n')
