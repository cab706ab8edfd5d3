"""One DOCX that holds every place a cited passage can hide, shared by the
anchoring unit tests and the browser tests (see tests/docx_factory.py)."""

from pathlib import Path

from tests.docx_factory import footnote, heading, make_docx, para, run, table, text_box

LONG_CELL_SENTENCES = [
    f"Clause {n}: the contractor shall inspect valve assembly {n} every {n + 2} weeks and record its seal pressure."
    for n in range(1, 40)
]
TARGET_SENTENCE = "Clause 23: the contractor shall inspect valve assembly 23 every 25 weeks and record its seal pressure."

PASSAGES = {
    "window": "The primary mirror is a 4.2 m meniscus of Zerodur, supported on 120 pneumatic actuators",
    "heading": "2. Coatings",
    "section": "All mirrors carry a protected-aluminium coating. A fresh coating reflects 91 percent of visible light.",
    "cell": "Nitrogen purge flow: 12 litres per minute",
    "nested": "Inner gasket torque 35 newton metres",
    "list": "Close the dome shutter before the wind exceeds 15 metres per second.",
    "textbox": "Warning: cryogenic surfaces below minus 190 degrees",
    "footnote": "Measured at the Paranal test bench in March 2024.",
    "chinese": "吡咯烷应密封储存于阴凉通风处，远离火源和氧化剂，操作时佩戴防护手套。",
    "decoy": "N-甲基吡咯烷酮应密封储存于阴凉通风处，远离火源和氧化剂，操作时佩戴防护手套。",
    "span_a": "The first half of this passage ends the paragraph about the shutter motor.",
    "span_b": "The second half starts the next paragraph about the encoder cable.",
}


def write_locate_document(path: Path) -> Path:
    p = PASSAGES
    body = [
        heading("1. Optics"),
        para(p["window"] + ", and polished to 12 nm rms", footnote(1), "."),
        heading("2. Coatings"),
        para(p["section"]),
        para("Recoating is scheduled every 18 months."),
        heading("3. Operations"),
        para(p["list"], numbered=True),
        para("Park the telescope at zenith after each night.", numbered=True),
        para(p["span_a"]),
        para(p["span_b"]),
        text_box(para(p["textbox"])),
        table([["Setting", "Value"], [p["cell"], "checked daily"],
               ["Gaskets", [table([["Part", "Torque"], ["Gasket", p["nested"]]])]]]),
        table([["Maintenance clauses", " ".join(LONG_CELL_SENTENCES)]]),
        heading("4. 化学品"),
        para(p["decoy"]),
        para(p["chinese"]),
        para("Other ", run("bold", bold=True), " words close the document."),
    ]
    return make_docx(path, body, footnotes={1: p["footnote"]})
