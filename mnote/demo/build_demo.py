"""The demo library's Word documents, and a CLI that writes the library.

    python -m mnote.demo.build_demo OUTPUT_DIR

The checked-in copy lives in ``mnote/demo/library/``. Its Markdown and text
files are their own source, edited in place; its Word documents are written
from the content below, so regenerate them with
``python -m mnote.demo.build_demo mnote/demo/library`` after editing it
(tests/library/test_demo_library.py fails if the two drift apart).

Some content is load-bearing for tests elsewhere, so keep it when editing:
the Chinese safety handbook mentions N-甲基吡咯烷酮 in an early section and has
a later, separate section about 吡咯烷 itself, so that a search for 吡咯烷 has
a substring-only match and a genuine match to tell apart.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from mnote.demo.docx_writer import (
    BulletList,
    Cell,
    Document,
    Equation,
    Footnote,
    Heading,
    Link,
    Math,
    NumberedList,
    Paragraph,
    Table,
    Text,
    delim,
    frac,
    plain,
    sqrt,
    sub,
    subsup,
    sup,
    write_docx,
)

LIBRARY_DIR = Path(__file__).resolve().parent / "library"


# --------------------------------------------------------------------------
# en/gamma-telescope-manual.docx
# --------------------------------------------------------------------------


def telescope_manual() -> Document:
    continue_merge = Cell(merge="continue")
    return Document(
        title="GAMMA Telescope Operations and Maintenance Manual",
        subject="Optics, calibration, maintenance and safety of the GAMMA 4.2 m telescope",
        keywords="telescope; Zerodur; calibration; flat-field; maintenance; safety",
        language="en-US",
        blocks=[
            Paragraph("GAMMA Telescope Operations and Maintenance Manual", style="Title"),
            Paragraph("Document GT-OPS-001, revision C. Applies to the GAMMA 4.2 m telescope and its imaging camera."),
            Heading("1. Introduction", 1),
            Paragraph(
                "The GAMMA telescope is a 4.2-metre Ritchey\u2013Chr\u00e9tien reflector on an altitude-azimuth "
                "mount, operated remotely from the control building at the summit. This manual covers the "
                "optical train, nightly calibration, scheduled maintenance and the safety rules that apply to "
                "everyone who enters the dome."
            ),
            Paragraph(
                "The manual does not replace the instrument handbooks. The observing schedule and the "
                "electronic logbook are on the ",
                Link("observatory operations portal", "https://example.org/gamma/operations"),
                ". Commands typed at the telescope control system (TCS) console are shown in ",
                Text("monospace", code=True),
                ", for example ",
                Text("tcs focus auto", code=True),
                ".",
            ),
            Heading("2. Optics", 1),
            Paragraph(
                "The primary mirror (M1) is a 4.2 m meniscus of Zerodur",
                Footnote(
                    "Zerodur is a glass-ceramic made by SCHOTT AG whose coefficient of thermal expansion is "
                    "0 \u00b1 0.02 \u00d7 10\u207b\u2076 K\u207b\u00b9 between 0 \u00b0C and 50 \u00b0C. "
                    "Zerodur is a registered trademark of SCHOTT AG."
                ),
                ", 170 mm thick and weighing about 16 tonnes. Its near-zero thermal expansion keeps the figure "
                "stable while the dome air cools during the night, so M1 itself needs no thermal refocusing; "
                "focus drifts come from the steel truss and are corrected by moving the secondary.",
            ),
            Paragraph(
                "M1 works at f/1.8 and rests on 60 axial and 24 lateral actuators of the active-optics system. "
                "A Shack\u2013Hartmann wavefront sensor in the guider measures low-order aberrations every "
                "60 seconds and the control loop updates the actuator forces. ",
                Text("Never disable the active-optics loop while tracking:", bold=True),
                " an uncorrected mirror develops more than 1\u2033 of astigmatism within minutes at low elevation.",
            ),
            Heading("2.1 Secondary and tertiary mirrors", 2),
            Paragraph(
                "The 1.1 m convex secondary (M2), also of Zerodur, sits on a hexapod that provides focus, "
                "tip-tilt and decenter. The combined system works at f/11 with a plate scale of 4.46\u2033 per "
                "millimetre. A flat tertiary (M3) on a rotating tower sends the beam to either Nasmyth platform; "
                "switching foci takes about 90 seconds."
            ),
            Heading("2.2 Coatings", 2),
            Paragraph(
                "All mirrors carry a protected-aluminium coating. A fresh coating reflects about 91 % at 550 nm "
                "and loses roughly 0.5 % per month to dust and micro-pitting. Reflectivity is measured with a "
                "portable reflectometer at twelve positions on M1 during each monthly inspection."
            ),
            Heading("3. Calibration", 1),
            Paragraph(
                "Every science frame is corrected with bias, dark and flat-field frames taken with the same "
                "detector settings. Calibration frames older than 24 hours must not be used, because the CCD "
                "controller is power-cycled daily and the bias level can shift by several ADU."
            ),
            Heading("3.1 Bias and dark frames", 2),
            Paragraph(
                "Take 21 bias frames at the start of the night and combine them with a median. The detector is "
                "cooled to \u2212110 \u00b0C and its dark current is below 0.5 e\u207b per pixel per hour, so "
                "dark frames are only needed for exposures longer than 300 s; nine 900 s darks per week suffice."
            ),
            Heading("3.2 Flat-field frames", 2),
            Paragraph(
                "Twilight sky flats are preferred for broadband filters because they illuminate the detector "
                "like the night sky. Take at least five flats per filter with a median level between 20,000 and "
                "35,000 ADU, offsetting the telescope by 10\u2033 between exposures so that stars can be rejected. "
                "Dome flats with the calibration lamp are used for narrowband filters and when twilight is cloudy."
            ),
            Table(
                caption="Table 1. Filter set of the imaging camera.",
                header=["Filter", "Type", "Central wavelength (nm)", "Bandwidth (nm)", "Flat-field source"],
                rows=[
                    ["g\u2032", Cell("Broadband", merge="restart"), "475", "140", "Twilight sky"],
                    ["r\u2032", continue_merge, "622", "135", "Twilight sky"],
                    ["i\u2032", continue_merge, "763", "150", "Twilight sky"],
                    ["H\u03b1", Cell("Narrowband", merge="restart"), "656.3", "3.5", "Dome lamp"],
                    ["[O III]", continue_merge, "500.7", "3.0", "Dome lamp"],
                    [
                        Cell(
                            "The two filter wheels have six positions each; the spare positions hold a dark "
                            "blank and an empty slot for focus checks.",
                            span=5,
                        )
                    ],
                ],
                widths=[2, 3, 3, 3, 4],
            ),
            Heading("3.3 Signal-to-noise ratio and exposure time", 2),
            Paragraph(
                "For a source that yields S detected electrons on top of B electrons of sky background in the "
                "measurement aperture, the signal-to-noise ratio in the photon-noise limit is"
            ),
            Equation((plain("SNR"), "=", frac("S", sqrt(("S", "+", "B"))))),
            Paragraph(
                "With count rates ",
                Math(sub("R", "S")),
                " for the source and ",
                Math(sub("R", "B")),
                " for the background, both in electrons per second, the exposure time that reaches a target "
                "signal-to-noise ratio is",
            ),
            Equation(
                (
                    sub("t", plain("exp")),
                    "=",
                    frac(
                        (sup(plain("SNR"), "2"), delim((sub("R", "S"), "+", sub("R", "B")))),
                        subsup("R", "S", "2"),
                    ),
                )
            ),
            Paragraph(
                "Example: a star giving 150 e\u207b/s against a sky of 400 e\u207b/s needs about 244 s to reach "
                "SNR = 100. Read noise and dark current are neglected here; add them to B for faint targets in "
                "narrowband filters."
            ),
            Heading("4. Maintenance", 1),
            Paragraph(
                "Scheduled maintenance is done by the day shift. Record every task and the measured values in the "
                "maintenance log before the telescope is released for the night."
            ),
            NumberedList(
                [
                    (
                        "Check the oil pressure of the hydrostatic azimuth bearings every day before opening; the "
                        "working range is 38\u201342 bar."
                    ),
                    (
                        "Clean M1 with CO\u2082 snow once a month, working from the centre outwards. Do not clean when "
                        "the mirror is less than 2 \u00b0C above the dew point."
                    ),
                    "Measure the coating reflectivity at twelve positions every month and update the trend sheet.",
                    "Inspect the M2 hexapod cables and lubricate the dome rotation bogies every three months.",
                    "Replace the desiccant of the camera vacuum pump every six months.",
                    (
                        "Re-aluminise M1 and M2 every 24 months, or earlier when the mean reflectivity at 550 nm drops "
                        "below 84 %. Allow three weeks for the full cycle."
                    ),
                ]
            ),
            Paragraph(
                "After any intervention on the optics, rebuild the pointing model (at least 40 stars) and take a "
                "full set of twilight flats."
            ),
            Heading("5. Safety", 1),
            Paragraph(
                "The dome contains heavy moving machinery, cryogens and high-voltage supplies. These rules apply "
                "to everyone, including accompanied visitors:"
            ),
            BulletList(
                [
                    "Never enter the dome alone at night; the night operator must know who is inside.",
                    (
                        "Lock out the drives at the local control panel before climbing onto the telescope structure. "
                        "The remote console cannot override a local lockout."
                    ),
                    "Wear a harness clipped to the fixed anchor points when working more than 2 m above the floor.",
                    (
                        "Handle liquid nitrogen only with a face shield and cryogenic gloves, and never in the closed "
                        "instrument room: a spilled 25 L dewar can lower the oxygen level below 19.5 %."
                    ),
                    "Keep clear of the dome shutter and windscreen while they move; they do not stop for obstacles.",
                ]
            ),
            Paragraph("Report every incident and near miss to the site safety officer within 24 hours."),
            Heading("6. Revision history", 1),
            Table(
                header=["Revision", "Date", "Changes"],
                rows=[
                    ["A", "2024-03-11", "First release."],
                    ["B", "2025-06-02", "Added narrowband filters and the exposure-time formula."],
                    ["C", "2026-01-05", "Re-aluminisation threshold lowered to 84 %."],
                ],
                widths=[1, 2, 6],
            ),
        ],
    )


# --------------------------------------------------------------------------
# zh/实验室安全手册.docx
# --------------------------------------------------------------------------


def safety_handbook() -> Document:
    flammable_continue = Cell(merge="continue")
    return Document(
        title="实验室安全手册",
        subject="有机合成实验室安全规范",
        keywords="实验室安全; 化学品储存; NMP; 吡咯烷; TES; 卫生清洁",
        language="zh-CN",
        blocks=[
            Paragraph("实验室安全手册", style="Title"),
            Paragraph("文件编号 LAB-SAF-2026，第3版。适用于有机合成实验室（B楼3层）全体人员、访问学者及实习学生。"),
            Heading("一、总则", 1),
            Paragraph(
                "本手册规定了实验室日常工作的基本安全要求。所有人员首次进入实验室前必须完成安全培训并通过考核，"
                "签署《安全承诺书》后方可独立开展实验。实验室安全第一责任人为课题组长，日常检查由安全员执行。"
            ),
            Paragraph(
                "任何人发现安全隐患，都有权并有义务立即停止相关操作，并向安全员报告。"
                "违反本手册的行为将视情节给予警告、暂停实验资格等处理。"
            ),
            Heading("二、个人防护", 1),
            Paragraph("进入实验室必须穿着阻燃实验服、长裤和不露脚面的鞋子，并全程佩戴护目镜；长发须束起。"),
            BulletList(
                [
                    "处理腐蚀性液体时加戴面罩和耐化学品手套（丁腈或氯丁橡胶手套）。",
                    "丁腈手套对多数有机溶剂只能提供短时防护，被溶剂沾污后应立即更换。",
                    "禁止在实验室内饮食、化妆或佩戴隐形眼镜。",
                    "离开实验室前脱下手套并洗手，不得戴手套触碰门把手、电梯按钮和公共电话。",
                ]
            ),
            Heading("三、常用溶剂与化学品储存", 1),
            Paragraph(
                "实验室常用的极性非质子溶剂包括 N,N-二甲基甲酰胺（DMF）、二甲基亚砜（DMSO）和 N-甲基吡咯烷酮（NMP）。"
                "N-甲基吡咯烷酮沸点约 202 °C，挥发性低，但可经皮肤吸收，并被列为生殖毒性物质，孕期或备孕人员不得操作。"
                "使用 NMP 必须在通风橱内进行，并佩戴丁基橡胶手套，普通丁腈手套数分钟内即被渗透。"
            ),
            Paragraph("化学品按危险类别分区储存，不得按字母顺序混放。下表列出了本实验室主要化学品的储存要求。"),
            Table(
                caption="表1 常用化学品的危险等级与储存要求",
                header=["化学品", "危险等级", "储存要求", "最大存量"],
                rows=[
                    ["乙醇", Cell("易燃液体 类别2", merge="restart"), "防爆柜，远离火源", "20 L"],
                    ["丙酮", flammable_continue, "防爆柜，远离氧化剂", "10 L"],
                    ["四氢呋喃", flammable_continue, "防爆柜，避光；开封后每3个月检测过氧化物", "5 L"],
                    ["N-甲基吡咯烷酮（NMP）", "生殖毒性 类别1B", "通风试剂柜，密封防潮", "5 L"],
                    ["二氯甲烷", "致癌性 类别2", "通风试剂柜，不得使用铝制容器", "10 L"],
                    ["浓硫酸", Cell("皮肤腐蚀 类别1A", merge="restart"), "酸柜，下置防漏托盘，与碱分开", "2.5 L"],
                    ["氢氧化钠", Cell(merge="continue"), "碱柜，密封防潮", "2 kg"],
                    [
                        Cell(
                            "注：危险等级依据 GB 30000 系列《化学品分类和标签规范》；最大存量指单个实验室的存放上限。",
                            span=4,
                        )
                    ],
                ],
                widths=[3, 3, 5, 2],
            ),
            Paragraph("稀释浓溶液时按下式计算所需浓溶液体积，并始终把酸缓慢加入水中，而不是把水加入酸中："),
            Equation((sub("V", "1"), "=", frac((sub("c", "2"), sub("V", "2")), sub("c", "1")))),
            Paragraph("例如配制 500 mL 1 mol/L 硫酸，需要 18.4 mol/L 浓硫酸约 27.2 mL。"),
            Heading("四、通风橱的使用", 1),
            Paragraph("通风橱面风速应保持在 0.4–0.6 m/s，每学期由设备处检测一次并张贴合格标签。"),
            NumberedList(
                [
                    "使用前确认风速报警器显示正常，视窗拉至标记线（约 40 cm）以下。",
                    "试剂和仪器至少放在距视窗内侧 15 cm 以外，不得堵塞后部导流板。",
                    "不得将通风橱当作化学品储存柜，实验结束后将试剂放回原储存位置。",
                    "离开时关闭视窗，但不得关闭排风。",
                ]
            ),
            Heading("五、三乙基硅基（TES）保护基的稳定性", 1),
            Paragraph(
                "三乙基硅基（TES）是合成中常用的羟基保护基，通常由三乙基氯硅烷（TESCl）或三乙基硅基三氟甲磺酸酯"
                "（TESOTf）在咪唑或 2,6-二甲基吡啶存在下引入。TES 醚的稳定性介于三甲基硅基（TMS）和叔丁基二甲基硅基"
                "（TBS）之间，了解其稳定性范围有助于避免后处理时意外脱保护。"
            ),
            BulletList(
                [
                    (
                        "酸性条件：TES 醚在 1% HCl 甲醇溶液或 AcOH/THF/H₂O（3:1:1）中数小时内即可脱除；"
                        "柱层析时应避免长时间接触酸性硅胶。"
                    ),
                    "碱性条件：对碳酸钾甲醇溶液、三乙胺等弱碱相对稳定，但在强碱水溶液中加热会缓慢水解。",
                    "氟离子：四丁基氟化铵（TBAF）的 THF 溶液在室温下几分钟内即可完全脱除 TES。",
                    "选择性：在 TBS 醚存在下，可用稀酸选择性脱除一级或二级 TES 醚。",
                ]
            ),
            Paragraph(
                "硅醚对酸的稳定性大致为 TMS < TES < TBS < TIPS < TBDPS。安全方面，TESCl 和 TESOTf 遇水剧烈水解，"
                "分别释放氯化氢和三氟甲磺酸，须在干燥氮气氛下用干燥注射器量取。含 TES 的中间体应密封于 −20 °C 保存，"
                "避免与盛放酸性试剂的容器共用同一冰箱。"
            ),
            Heading("六、吡咯烷的操作与储存", 1),
            Paragraph(
                "吡咯烷是一种易燃的环状仲胺（CAS 123-75-1），无色液体，有强烈的氨样气味，沸点约 87 °C，闪点仅约 3 °C。"
                "其蒸气比空气重，可沿台面和地面扩散到远处火源。吡咯烷呈强碱性，对皮肤、眼睛和呼吸道有腐蚀性，"
                "吸入高浓度蒸气会引起咳嗽、头痛甚至肺水肿。"
            ),
            BulletList(
                [
                    "只能在通风橱内量取和转移吡咯烷，佩戴护目镜、面罩及丁基橡胶手套。",
                    "储存于防爆柜的碱性区，充氮密封，远离酸、酰氯、酸酐和氧化剂，不得与酸柜相邻。",
                    "用吡咯烷与酮制备烯胺时常在回流甲苯中分水，须使用油浴或加热套，禁止明火，并确认冷凝水畅通。",
                    "少量泄漏时用干沙或专用吸附棉覆盖，收集后按碱性有机废液处理，禁止用纸巾擦拭后丢入普通垃圾桶。",
                    "皮肤接触后立即用大量流动清水冲洗至少 15 分钟并就医。",
                ]
            ),
            Paragraph(
                "吡咯烷的化学品安全技术说明书（SDS）可在 ",
                Link("PubChem 数据库", "https://pubchem.ncbi.nlm.nih.gov/compound/Pyrrolidine"),
                " 查阅，实验室门口的 SDS 文件夹中也有纸质版。",
            ),
            Heading("七、危险废弃物处理", 1),
            Paragraph(
                "废液按“含卤有机废液”“不含卤有机废液”“酸性无机废液”“碱性无机废液”四类分别收集。"
                "废液桶装至四分之三即应更换，并在标签上写明主要成分和大致比例。"
            ),
            Paragraph(
                "含过氧化物、叠氮化物或活泼金属的废弃物不得直接倒入废液桶，必须先按标准操作规程淬灭。"
                "针头和碎玻璃放入专用利器盒。每周五下午由安全员统一登记后送交学校危废暂存库。"
            ),
            Heading("八、实验室内卫生清洁要求", 1),
            Paragraph("良好的卫生习惯是防止交叉污染和意外接触化学品的前提，具体要求如下："),
            NumberedList(
                [
                    "每日实验结束后清理个人台面并用湿抹布擦拭；溅出的试剂立即处理，不得留待次日。",
                    "公共区域（天平室、旋转蒸发仪台、冰箱）实行轮值清洁，值日表张贴于实验室门口。",
                    "天平使用后用软毛刷清扫称量室，称量纸和药勺不得留在天平内。",
                    "玻璃仪器洗净后放到指定晾干架，两周内无人认领的由值日人员收回公共柜。",
                    "冰箱每月除霜并清点一次，标签不清或过期的样品按危险废弃物处理。",
                    "实验室内禁止存放食品、饮料和餐具，垃圾桶每日清运。",
                ]
            ),
            Heading("九、应急处置", 1),
            Paragraph("发生火灾、泄漏或人员受伤时，按以下顺序处置："),
            NumberedList(
                [
                    "确保自身安全，大声呼喊提醒周围人员。",
                    "小型火情使用就近的二氧化碳或干粉灭火器；金属钠等活泼金属着火用干沙覆盖，严禁用水。",
                    "火势无法控制时拉响火警，关闭通风橱视窗，沿疏散路线撤离到楼前集合点。",
                    (
                        "拨打校内应急电话",
                        Footnote("校内应急电话 6688-1119 全天 24 小时有人值守；外线火警请拨 119，急救请拨 120。"),
                        "，并向安全员和课题组长报告。",
                    ),
                    "事后 24 小时内填写《事故/未遂事件报告表》。",
                ]
            ),
            Paragraph("洗眼器和紧急喷淋装置每周测试一次，测试记录张贴在装置旁。"),
        ],
    )


# --------------------------------------------------------------------------
# Writing the library
# --------------------------------------------------------------------------


def _text_file(relative: str) -> Callable[[Path], Path]:
    """A Markdown or text document: the checked-in file is its own source."""

    def write(path: Path) -> Path:
        content = (LIBRARY_DIR / relative).read_bytes()  # read first: ``build(LIBRARY_DIR)`` writes it back
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        return path

    return write


def _docx_writer(make: Callable[[], Document]) -> Callable[[Path], Path]:
    return lambda path: write_docx(make(), path)


LIBRARY: dict[str, Callable[[Path], Path]] = {
    "en/gamma-telescope-manual.docx": _docx_writer(telescope_manual),
    "en/onboarding-notes.md": _text_file("en/onboarding-notes.md"),
    "en/glossary.txt": _text_file("en/glossary.txt"),
    "zh/实验室安全手册.docx": _docx_writer(safety_handbook),
    "zh/会议纪要-2026-10.md": _text_file("zh/会议纪要-2026-10.md"),
    "zh/设备清单.txt": _text_file("zh/设备清单.txt"),
}


def build(output_dir: str | Path) -> list[Path]:
    """Write every demo document under ``output_dir``; returns the paths written."""
    root = Path(output_dir)
    return [write(root / relative) for relative, write in LIBRARY.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mnote.demo.build_demo",
        description="Write the MNote demo document library.",
    )
    parser.add_argument("output_dir", type=Path, help="directory to write (created if missing)")
    args = parser.parse_args(argv)
    for path in build(args.output_dir):
        print(f"{path.stat().st_size:>8}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
