"""Inputs for the differential metric cases: the :class:`Case` record and real files written on the spot
(xlsx, docx, odt, pptx, pdf, png, wav, mp3, epub, avi, zip, tar.gz, xcu, vlcrc, json, csv, txt)."""

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
    #: For own metrics newer than desktop-env 1.0.2: the OSWorld repository's metric module (``"gimp"``) whose
    #: function of the same name is the reference (otherwise desktop-env's function of that name is).
    official: str | None = None


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

    def pptx_with(self, name: str, build: Callable[[Any], None]) -> str:
        """A pptx made by ``build(presentation)`` (python-pptx), for what :meth:`pptx` does not cover."""
        from pptx import Presentation

        prs = Presentation()
        build(prs)
        prs.save(self.root / name)
        return self.path(name)

    def odt(self, name: str, paragraphs: list[tuple[str, str | None]]) -> str:
        """An OpenDocument text (odfpy): each paragraph one span, with that background colour (or none)."""
        from odf.opendocument import OpenDocumentText
        from odf.style import Style, TextProperties
        from odf.text import P, Span

        doc = OpenDocumentText()
        for i, (text, colour) in enumerate(paragraphs):
            para = P()
            if colour is None:
                para.addElement(Span(text=text))
            else:
                style = Style(name=f"T{i}", family="text")
                style.addElement(TextProperties(backgroundcolor=colour))
                doc.automaticstyles.addElement(style)
                para.addElement(Span(stylename=style, text=text))
            doc.text.addElement(para)
        doc.save(str(self.root / name))
        return self.path(name)

    def mp3(self, name: str, tags: dict[str, str]) -> str:
        """Silent MPEG-1 Layer III frames with these ID3 tags (mutagen's EasyID3 keys: title, artist ...)."""
        from mutagen.easyid3 import EasyID3

        frame = b"\xff\xfb\x90\x64" + bytes(413)  # 128 kbit/s, 44.1 kHz: 417 bytes a frame
        (self.root / name).write_bytes(frame * 20)
        if tags:
            id3 = EasyID3()
            for key, value in tags.items():
                id3[key] = value
            id3.save(self.root / name)
        return self.path(name)

    def epub(self, name: str, chapters: dict[str, str], identifier: str = "urn:uuid:1") -> str:
        """An EPUB (zip) with content.opf, toc.ncx and one XHTML page per chapter."""
        opf = (f'<?xml version="1.0"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="2.0">\n'
               f'<metadata><dc:title xmlns:dc="http://purl.org/dc/elements/1.1/">Book</dc:title>\n'
               f'<dc:identifier xmlns:dc="http://purl.org/dc/elements/1.1/">{identifier}</dc:identifier>\n'
               f'</metadata>\n</package>\n')
        ncx = ('<?xml version="1.0"?>\n<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/">\n<navMap>\n'
               + "".join(f'<navPoint id="{c}"><text>{c}</text></navPoint>\n' for c in chapters) + "</navMap>\n</ncx>\n")
        members = {"mimetype": b"application/epub+zip", "content.opf": opf.encode(), "toc.ncx": ncx.encode()}
        members |= {f"{c}.html": f"<html><body>\n<h1>{c}</h1>\n<p>{text}</p>\n</body></html>".encode()
                    for c, text in chapters.items()}
        return self.zip(name, members)

    def video(self, name: str, shades: list[int], size: tuple[int, int] = (64, 48), moving: bool = False) -> str:
        """An MJPEG AVI (OpenCV), one frame per shade: a grey field with a white square (moving if asked)."""
        import cv2
        import numpy as np

        width, height = size
        out = cv2.VideoWriter(str(self.root / name), cv2.VideoWriter_fourcc(*"MJPG"), 10, (width, height))
        for i, shade in enumerate(shades):
            frame = np.full((height, width, 3), shade, np.uint8)
            x = (i * 7) % (width - 16) if moving else 8
            frame[8:24, x:x + 16] = 255
            out.write(frame)
        out.release()
        return self.path(name)

    def tar(self, name: str, members: dict[str, bytes]) -> str:
        """A gzipped tar of these members."""
        import io
        import tarfile

        with tarfile.open(self.root / name, "w:gz") as archive:
            for member, data in members.items():
                info = tarfile.TarInfo(member)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return self.path(name)

    def image(self, name: str, build: Callable[[Any], None], size: tuple[int, int] = (64, 64),
              mode: str = "RGB", colour: Any = (255, 255, 255)) -> str:
        """An image drawn by ``build(ImageDraw)`` on a plain background (Pillow), saved by its suffix."""
        from PIL import Image, ImageDraw

        img = Image.new(mode, size, colour)
        build(ImageDraw.Draw(img))
        img.save(self.root / name)
        return self.path(name)
