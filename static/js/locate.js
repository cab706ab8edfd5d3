// The preview's locator: lands on the cited passage and tells the parent page
// what it found. Protocol (same origin only):
//   parent → preview  {type: "mnote:locate", requestId, locator}
//   preview → parent  {type: "mnote:ready", sourceId}
//   preview → parent  {type: "mnote:located", requestId, status, score, blockIndex, paraId, text,
//                      endBlockIndex, quote, textPosition, textQuote}   (the last four for text documents)
(function () {
  "use strict";

  const doc = document.getElementById("document");
  if (!doc) return;
  const sourceId = Number(doc.dataset.sourceId);
  const kind = doc.dataset.kind;
  const note = document.getElementById("locate-note");
  const origin = window.location.origin;

  // --- text documents: the server says where, the page draws the range -------
  // The server (mnote/preview/anchoring.py) resolves a passage to ink offsets
  // (characters that are not whitespace) inside blocks; the same whitespace
  // class and skipped elements are used here, so offsets mean the same place.
  const SPACE = /[\t\n\v\f\r \u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff\u00ad]/;
  const SKIPPED = ".docx-noteref, .docx-backref, .preview-note";
  // The renderer's own text (list labels, note numbers, placeholders): marked
  // with the passage, but a quote may lack it (anchoring.py's SOFT_CLASSES).
  const SOFT = ".docx-label, .docx-note-label, .docx-image-placeholder, .docx-hf-label";
  // Longer evidence goes as its head and tail (a URL has a size limit).
  const EVIDENCE_URL_CHARS = 2400;

  function ownerOf(node) {
    const parent = node.parentElement;
    return parent ? parent.closest("[data-block-index]") : null;
  }

  function textNodesOf(block) {
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    const nodes = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (ownerOf(node) !== block || node.parentElement.closest(SKIPPED)) continue;
      nodes.push(node);
    }
    return nodes;
  }

  // The DOM point before the offset-th ink character of a block (or after
  // the one before it, for the end of a range).
  function domPoint(blockIndex, offset, isEnd) {
    const block = doc.querySelector(`[data-block-index="${blockIndex}"]`);
    if (!block) return null;
    let count = 0;
    let last = null;
    for (const node of textNodesOf(block)) {
      let i = 0;
      for (const ch of node.data) {
        if (!SPACE.test(ch)) {
          if (!isEnd && count === offset) return [node, i];
          count++;
          if (isEnd && count === offset) return [node, i + ch.length];
        }
        i += ch.length;
      }
      last = node;
    }
    return isEnd && last ? [last, last.data.length] : null;
  }

  // --- highlighting -----------------------------------------------------------
  let shown = [];
  function clearHighlight() {
    stopFollowing();
    for (const element of shown) {
      if (element.tagName === "MARK") {
        const parent = element.parentNode;
        if (!parent) continue;
        element.replaceWith(...element.childNodes);
        parent.normalize();
      } else {
        element.classList.remove("mnote-hit", "mnote-hit-outline", "mnote-focus");
      }
    }
    shown = [];
    doc.querySelectorAll(".mnote-rect").forEach((rect) => rect.remove());
  }

  // Marks around every piece of text inside the range (across blocks when
  // the passage spans them); whitespace between table cells stays unmarked.
  function markRange(range) {
    const root = range.commonAncestorContainer.nodeType === Node.TEXT_NODE ? range.commonAncestorContainer.parentNode : range.commonAncestorContainer;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const pieces = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!range.intersectsNode(node) || !ownerOf(node) || node.parentElement.closest(SKIPPED)) continue;
      const from = node === range.startContainer ? range.startOffset : 0;
      const to = node === range.endContainer ? range.endOffset : node.data.length;
      if (to > from && /\S/.test(node.data.slice(from, to))) pieces.push([node, from, to]);
    }
    const marks = [];
    for (let [node, from, to] of pieces) {
      if (to < node.data.length) node.splitText(to);
      if (from > 0) node = node.splitText(from);
      const mark = document.createElement("mark");
      mark.className = "mnote-hit";
      node.replaceWith(mark);
      mark.append(node);
      marks.push(mark);
    }
    return marks;
  }

  function highlight(marks, query) {
    shown = marks;
    const focus = focusOf(marks, query || "");
    for (const mark of focus) mark.classList.add("mnote-focus");
    follow(focus[0] || marks[0]);
    window.setTimeout(() => {
      for (const mark of marks) if (shown.includes(mark)) mark.classList.add("mnote-hit-outline");
    }, 1600);
  }

  // Scroll this frame only: scrollIntoView would scroll the parent page too.
  function scrollToCenter(element, behavior = "smooth") {
    const rect = element.getBoundingClientRect();
    // Centre in what the context panel leaves visible.
    const contextPanel = document.getElementById("context-panel");
    const visible = window.innerHeight - (contextPanel && !contextPanel.hidden ? contextPanel.offsetHeight : 0);
    const offset = Math.max((visible - Math.min(rect.height, visible)) / 2, 0);
    window.scrollTo({ top: window.scrollY + rect.top - offset, behavior });
  }

  // Scroll to the mark, and again each time the layout moves it: pictures
  // and web fonts arrive after the page (a deck's pictures load above the
  // mark and push it out of view). Until the reader scrolls on their own, a
  // new locate replaces it, or the page has long settled.
  const FOLLOW_MS = 15000;
  const READER_MOVES = ["wheel", "touchstart", "keydown", "mousedown"];
  let stopFollowing = () => {};
  function follow(element) {
    stopFollowing();
    let settled = false;
    let lastHeight = doc.offsetHeight;
    const again = () => {
      if (!element.isConnected) return stop();
      if (doc.offsetHeight === lastHeight && settled) return;
      lastHeight = doc.offsetHeight;
      scrollToCenter(element, "instant");
    };
    const observer = new ResizeObserver(() => {
      // The first call only reports the size the document has now.
      if (settled) again();
      settled = true;
    });
    const onLoad = (event) => { if (event.target.tagName === "IMG") again(); };
    const timer = window.setTimeout(() => stop(), FOLLOW_MS);
    function stop() {
      observer.disconnect();
      document.removeEventListener("load", onLoad, true);
      for (const type of READER_MOVES) window.removeEventListener(type, stop, true);
      window.clearTimeout(timer);
      stopFollowing = () => {};
    }
    stopFollowing = stop;
    observer.observe(doc);
    document.addEventListener("load", onLoad, true);
    for (const type of READER_MOVES) window.addEventListener(type, stop, { capture: true, passive: true });
    if (document.fonts && document.fonts.status !== "loaded") document.fonts.ready.then(() => { if (stopFollowing === stop) scrollToCenter(element, "instant"); });
    scrollToCenter(element);
  }

  function showNote(visible) {
    if (note) note.hidden = !visible;
  }

  function notFound() {
    clearHighlight();
    showNote(true);
    return { status: "not_found", score: 0, blockIndex: null, paraId: null, text: "" };
  }

  // The code points of a string that fit in a URL parameter of about n bytes.
  function fitting(text, n, fromEnd) {
    const chars = Array.from(text);
    let size = 0;
    const out = [];
    for (let i = 0; i < chars.length; i++) {
      const ch = fromEnd ? chars[chars.length - 1 - i] : chars[i];
      size += encodeURIComponent(ch).length;
      if (size > n) break;
      out.push(ch);
    }
    return (fromEnd ? out.reverse() : out).join("");
  }

  async function fetchAnchor(locator) {
    const evidence = locator.evidenceText || locator.displayQuote || "";
    if (!evidence.trim() || !doc.dataset.anchorUrl) return null;
    const url = new URL(doc.dataset.anchorUrl, origin);
    if (encodeURIComponent(evidence).length > EVIDENCE_URL_CHARS) {
      url.searchParams.set("evidence", fitting(evidence, EVIDENCE_URL_CHARS / 2, false));
      url.searchParams.set("tail", fitting(evidence, EVIDENCE_URL_CHARS / 2, true));
    } else {
      url.searchParams.set("evidence", evidence);
    }
    const headings = locator.headingPath || [];
    if (headings.length) url.searchParams.set("heading", headings[headings.length - 1]);
    if (locator.chunkId) url.searchParams.set("chunk_id", locator.chunkId);
    if (locator.searchQuery) url.searchParams.set("query", locator.searchQuery.slice(0, 300));
    // A sheet of one page: that page. A sheet of many: the server finds the
    // page that holds the passage, and says which (rowsPage).
    if (doc.dataset.rowsPage && !manyRowsPages()) url.searchParams.set("rows_page", doc.dataset.rowsPage);
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      const data = response.ok ? await response.json() : null;
      return data && data.anchor ? { ...data.anchor, rowsPage: data.rowsPage } : null;
    } catch (error) {
      return null; // not found, and the note says so
    }
  }

  // --- the pages of a big sheet ------------------------------------------------
  function manyRowsPages() {
    return !!doc.querySelector("nav.sheet-pages");
  }

  // Shows another page of the sheet in place (the page stays, and so do the
  // parent's messages): the page's HTML as the preview serves it.
  async function showRowsPage(number) {
    const url = new URL(window.location.href);
    url.searchParams.delete("c");
    url.searchParams.delete("locator");
    url.searchParams.set("rows_page", number);
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok) return false;
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html").getElementById("document");
      if (!fresh || fresh.dataset.rowsPage !== String(number)) return false;
      clearHighlight();
      doc.replaceChildren(...Array.from(fresh.childNodes)); // a copy: the live list empties as nodes move
      doc.dataset.textVersion = fresh.dataset.textVersion || "";
      doc.dataset.rowsPage = fresh.dataset.rowsPage;
      // The page's own indexes were of the other page's text.
      pageIndex = null;
      grams.clear();
      localIndexWorthIt = null;
      return true;
    } catch (error) {
      return false;
    }
  }

  // --- the page's own fast path: a verbatim quote found once ----------------
  // The same skeleton as the server (case-folded letters and digits), over
  // this page's text. A quote that occurs exactly once needs no request;
  // anything else (close but not identical text, repeated text, the cited
  // chunk's bounds) is the server's to resolve.
  let pageIndex = null;
  const ALNUM = /[\p{L}\p{N}]/u;
  const folded = new Map();
  function fold(ch) {
    let out = folded.get(ch);
    if (out === undefined) {
      out = Array.from(ch.normalize("NFKC").toLowerCase()).filter((c) => ALNUM.test(c)).join("");
      folded.set(ch, out);
    }
    return out;
  }

  function skeletonOf(text) {
    let out = "";
    for (const ch of text) if (!SPACE.test(ch)) out += fold(ch);
    return out;
  }

  // Two skeletons of the page: all of its text, and its text without the
  // renderer's own (so "Close the valve" finds "1. Close the valve").
  function indexPage() {
    if (pageIndex) return pageIndex;
    const full = { skel: [], block: [], offset: [] };
    const bare = { skel: [], block: [], offset: [] };
    const counters = new Map();
    const walker = document.createTreeWalker(doc, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const owner = ownerOf(node);
      if (!owner || node.parentElement.closest(SKIPPED)) continue;
      const soft = !!node.parentElement.closest(SOFT);
      const b = Number(owner.dataset.blockIndex);
      let n = counters.get(b) || 0;
      for (const ch of node.data) {
        if (SPACE.test(ch)) continue;
        for (const c of fold(ch)) {
          for (const index of soft ? [full] : [full, bare]) {
            index.skel.push(c);
            index.block.push(b);
            index.offset.push(n);
          }
        }
        n++;
      }
      counters.set(b, n);
    }
    pageIndex = [full, bare].map((index) => ({ ...index, skel: index.skel.join("") }));
    return pageIndex;
  }

  // Indexing a very long document in the page costs more than one request.
  const LOCAL_INDEX_MAX_BLOCKS = 3000;
  let localIndexWorthIt = null;

  function localAnchor(locator) {
    if (locator.chunkId || !(locator.evidenceText || locator.displayQuote)) return null;
    if (localIndexWorthIt === null) localIndexWorthIt = doc.querySelectorAll("[data-block-index]").length <= LOCAL_INDEX_MAX_BLOCKS;
    if (!localIndexWorthIt) return null;
    const evidence = locator.evidenceText || locator.displayQuote;
    // The whole evidence ("<heading> — <window>" too), with or without labels.
    // A window found without its heading is the server's: it takes the
    // heading in when it stands just before (a label, a placeholder between),
    // where the page alone would mark the window without the cited heading.
    const needle = skeletonOf(evidence);
    if (needle.length < 8) return null;
    for (const index of indexPage()) {
      const first = index.skel.indexOf(needle);
      if (first < 0) continue;
      if (index.skel.indexOf(needle, first + 1) >= 0) return null; // more than one place: the server chooses
      const last = first + needle.length - 1;
      return {
        status: "exact", score: 1, local: true,
        start: { block: index.block[first], offset: index.offset[first] },
        end: { block: index.block[last], offset: index.offset[last] + 1 },
        trail: (evidence.match(/[^\p{L}\p{N}\s]{1,3}$/u) || [""])[0],
      };
    }
    return null;
  }

  // --- the page's own fast refusal: evidence the server cannot find ---------
  // The server aligns close text by seeds of the passage's skeleton (k
  // letters at every k/2: anchoring.py's _vote and seed_length) and calls it
  // found only when seeds in one place cover FOUND of it. Every seed it uses
  // is a k-gram of the page, so when the page's k-grams (at every offset)
  // cover less than FOUND of the passage, the server would say "not found"
  // too: say it here, without a request. It can only refuse, never mark.
  const FOUND = 0.6; // text_map.FOUND
  // anchoring.SEEDS: [short passage, long passage, length from which it is long, shortest].
  const SEEDS = { cjk: [4, 6, 60, 3], other: [8, 12, 120, 5] };

  function seedLength(n, cjk) {
    const [short, long, fromN, shortest] = cjk ? SEEDS.cjk : SEEDS.other;
    const k = n >= fromN ? long : short;
    return n < 2 * k ? Math.max(shortest, Math.floor(n / 2)) : k;
  }
  // anchoring.py's _LABEL: a list label in front of an item, dropped for the bare skeleton.
  const LABEL = /(?<=^|\s)(?:\(?(?:\p{Nd}{1,3}(?:\.\p{Nd}{1,3})*|[A-Za-z]|[ivxlcIVXLC]{1,6})[.)、]|\(\p{Nd}{1,3}\)|[•·▪◦‣○●■□◆◇➢✓*-])(?=\s)/gu;
  const grams = new Map();

  function isCjk(ch) {
    return (ch >= "\u3040" && ch <= "\u9fff") || (ch >= "\uac00" && ch <= "\ud7af") || (ch >= "\uf900" && ch <= "\ufaff") || ch.codePointAt(0) >= 0x20000;
  }

  function gramsOf(which, k) {
    const key = `${which}:${k}`;
    let set = grams.get(key);
    if (!set) {
      const skel = indexPage()[which].skel;
      set = new Set();
      for (let i = 0; i + k <= skel.length; i++) set.add(skel.slice(i, i + k));
      grams.set(key, set);
    }
    return set;
  }

  // Whether the page's k-grams could cover FOUND of a passage skeleton.
  function mayBeIn(which, needle) {
    const chars = Array.from(needle);
    const head = chars.slice(0, 200);
    if (chars.length < 16) return true; // a short passage is a seed or two: the server decides
    const k = seedLength(chars.length, head.filter(isCjk).length > head.length / 3);
    const set = gramsOf(which, k);
    let covered = 0;
    let reach = 0;
    for (let o = 0; o + k <= chars.length; o++) {
      if (!set.has(chars.slice(o, o + k).join(""))) continue;
      covered += o + k - Math.max(o, reach);
      reach = o + k;
    }
    return covered >= FOUND * chars.length;
  }

  function surelyAbsent(locator) {
    // Another page of a big sheet may hold it: the server looks there.
    if (locator.chunkId || !localIndexWorthIt || manyRowsPages()) return false;
    const evidence = locator.evidenceText || locator.displayQuote || "";
    // Long evidence goes to the server as head and tail: its rules differ.
    if (!evidence.trim() || encodeURIComponent(evidence).length > EVIDENCE_URL_CHARS) return false;
    const cut = evidence.indexOf(" — ");
    const windows = cut >= 0 ? [evidence, evidence.slice(cut + 3)] : [evidence];
    for (const text of windows) {
      const whole = skeletonOf(text);
      const bare = skeletonOf(text.replace(LABEL, " ")) || whole;
      if (mayBeIn(0, whole) || mayBeIn(1, bare)) return false;
    }
    return true;
  }

  // A final "." of the quote belongs to it when the text has it there too.
  function takeTrail(end, trail) {
    const [node, at] = end;
    return node.data.startsWith(trail, at) ? [node, at + trail.length] : end;
  }

  // Timed as performance measures ("mnote:anchor", "mnote:draw") for the
  // jump-accuracy bench: where a locate's time goes, in the page. A browser
  // without User Timing level 3 only loses the measure, never the locate.
  function measure(name, start, end, detail) {
    try {
      performance.measure(name, { start, end, detail });
    } catch (error) {
      // no measure
    }
  }

  // --- whole words, and a sheet's cited row ----------------------------------
  // A passage found close (not identical) or a quote cut from a longer text
  // may start or end inside a word: the mark takes the whole word (not in
  // CJK text, which has no word boundaries).
  const WORD_CHAR = /[\p{L}\p{N}]/u;
  const WORD_REACH = 40;
  function inWord(text, i) {
    return i >= 0 && i < text.length && WORD_CHAR.test(text[i]) && !isCjk(text[i]);
  }

  function wordStart([node, at]) {
    let i = at;
    while (i > 0 && at - i < WORD_REACH && inWord(node.data, i - 1) && inWord(node.data, i)) i--;
    return [node, i];
  }

  function wordEnd([node, at]) {
    let i = at;
    while (i < node.data.length && i - at < WORD_REACH && inWord(node.data, i - 1) && inWord(node.data, i)) i++;
    return [node, i];
  }

  // A sheet's rows are its blocks. Evidence over many rows (a chunk of a
  // sheet has no sentences) marks the row that holds the query, cell by
  // cell: a query word found in fewer of the passage's rows says more.
  const SHEETS = new Set(["xlsx", "csv"]);
  function citedRow(range, query) {
    const rows = Array.from(doc.querySelectorAll("tr[data-block-index]")).filter((row) => range.intersectsNode(row));
    if (rows.length < 2) return null;
    const best = holdingQuery(rows.map((row) => row.textContent), query);
    if (best === null) return null;
    const cells = Array.from(rows[best].querySelectorAll("td")).filter((cell) => range.intersectsNode(cell) && cell.textContent.trim());
    if (!cells.length) return null;
    const narrowed = document.createRange();
    narrowed.setStartBefore(cells[0]);
    narrowed.setEndAfter(cells[cells.length - 1]);
    return narrowed;
  }

  // Which of some texts holds the query best (the first of equals), or null
  // when none holds a word of it: a word found in fewer of them says more.
  function holdingQuery(texts, query) {
    const terms = Array.from(new Set(query.split(/[^\p{L}\p{N}]+/u).map(skeletonOf).filter((term) => term.length >= 2)));
    if (!terms.length || texts.length < 2) return null;
    const skeletons = texts.map(skeletonOf);
    const holding = terms.map((term) => skeletons.filter((skel) => skel.includes(term)).length);
    let best = null;
    let bestScore = 0;
    skeletons.forEach((skel, i) => {
      const score = terms.reduce((sum, term, t) => sum + (skel.includes(term) ? 1 / holding[t] : 0), 0);
      if (score > bestScore) [best, bestScore] = [i, score];
    });
    return best;
  }

  // The marks of the block that holds the query best: what the preview
  // scrolls to when the evidence runs over several blocks (a card's
  // evidence is padded with what stands around the answer, such as the
  // titles of the slides before it).
  function focusOf(marks, query) {
    const blocks = [];
    const byBlock = new Map();
    for (const mark of marks) {
      const block = ownerOf(mark.firstChild);
      if (!byBlock.has(block)) {
        byBlock.set(block, []);
        blocks.push(block);
      }
      byBlock.get(block).push(mark);
    }
    const best = holdingQuery(blocks.map((block) => byBlock.get(block).map((mark) => mark.textContent).join(" ")), query);
    return best === null ? [] : byBlock.get(blocks[best]);
  }

  async function textLocate(locator) {
    // Only this locate's measures are kept.
    performance.clearMeasures("mnote:anchor");
    performance.clearMeasures("mnote:draw");
    const t0 = performance.now();
    let via = "given";
    let anchor = locator.anchor && locator.anchor.version === doc.dataset.textVersion ? locator.anchor : null;
    if (!anchor) {
      via = "page";
      anchor = localAnchor(locator);
    }
    if (!anchor && !surelyAbsent(locator)) {
      via = "server";
      anchor = await fetchAnchor(locator);
    }
    if (anchor && anchor.rowsPage && String(anchor.rowsPage) !== doc.dataset.rowsPage && !(await showRowsPage(anchor.rowsPage))) anchor = null;
    const t1 = performance.now();
    measure("mnote:anchor", t0, t1, via);
    if (!anchor) return notFound();
    // Unmark first: unmarking merges text nodes, which would detach the range's ends.
    clearHighlight();
    const start = domPoint(anchor.start.block, anchor.start.offset, false);
    let end = domPoint(anchor.end.block, anchor.end.offset, true);
    if (end && anchor.trail) end = takeTrail(end, anchor.trail);
    if (!start || !end) return notFound();
    let range = document.createRange();
    range.setStart(...wordStart(start));
    range.setEnd(...wordEnd(end));
    if (SHEETS.has(kind)) range = citedRow(range, locator.searchQuery || "") || range;
    const text = range.toString();
    const marks = markRange(range);
    if (!marks.length) return notFound();
    highlight(marks, locator.searchQuery);
    showNote(false);
    markContext(text);
    measure("mnote:draw", t1, performance.now());
    // The blocks marked (a sheet's cited row may lie inside the anchor's).
    const first = ownerOf(marks[0].firstChild);
    const last = ownerOf(marks[marks.length - 1].firstChild);
    return {
      status: anchor.status,
      score: anchor.score,
      blockIndex: first ? Number(first.dataset.blockIndex) : anchor.start.block,
      endBlockIndex: last ? Number(last.dataset.blockIndex) : anchor.end.block,
      paraId: (first && first.dataset.paraId) || null,
      text: text.slice(0, 200),
      quote: text.slice(0, 20000),
      textPosition: anchor.textPosition,
      textQuote: anchor.textQuote,
    };
  }

  // Rects sit on the page image itself (not its figure, whose caption
  // would stretch the percentages and push them below the text).
  function pageLayer(page) {
    const holder = doc.querySelector(`.pdf-page[data-page="${page}"]`);
    if (!holder) return null;
    let layer = holder.querySelector(".pdf-layer");
    if (!layer) {
      const img = holder.querySelector("img");
      layer = document.createElement("div");
      layer.className = "pdf-layer";
      if (img) {
        img.replaceWith(layer);
        layer.append(img);
      } else {
        holder.prepend(layer);
      }
    }
    return layer;
  }

  function drawRects(page, rects, extraClass) {
    const layer = pageLayer(page);
    if (!layer) return null;
    for (const [x0, y0, x1, y1] of rects) {
      const rect = document.createElement("div");
      rect.className = extraClass ? `mnote-rect mnote-hit ${extraClass}` : "mnote-rect mnote-hit";
      rect.style.left = `${x0 * 100}%`;
      rect.style.top = `${y0 * 100}%`;
      rect.style.width = `${(x1 - x0) * 100}%`;
      rect.style.height = `${(y1 - y0) * 100}%`;
      layer.appendChild(rect);
    }
    return layer;
  }

  async function pdfLocate(locator) {
    clearHighlight();
    if (locator.precision === "bbox" && locator.page && locator.bbox) {
      const holder = drawRects(locator.page, [locator.bbox]);
      if (holder) {
        follow(holder.querySelector(".mnote-rect"));
        showNote(false);
        return { status: "exact", score: 1, blockIndex: null, paraId: null, text: (locator.displayQuote || "").slice(0, 200) };
      }
    }
    // No layout box: search the PDF's text layer, reported as a text match.
    const url = new URL(doc.dataset.findUrl, origin);
    url.searchParams.set("evidence", locator.evidenceText || locator.displayQuote || "");
    url.searchParams.set("query", locator.searchQuery || "");
    if (locator.page) url.searchParams.set("page", locator.page);
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      const match = response.ok ? await response.json() : null;
      if (match && match.page) {
        // A passage across a page break is marked on every page it covers.
        const parts = match.parts && match.parts.length ? match.parts : [{ page: match.page, rects: match.rects }];
        const layers = parts.map((part) => drawRects(part.page, part.rects)).filter(Boolean);
        // The sentence that holds the query is drawn stronger, and the
        // preview opens its page: the evidence around it may start a page
        // earlier.
        const focus = match.focus && match.focus.rects && match.focus.rects.length ? drawRects(match.focus.page, match.focus.rects, "mnote-focus") : null;
        if (layers.length) {
          const target = (focus && focus.querySelector(".mnote-focus")) || layers[0].querySelector(".mnote-rect") || layers[0];
          follow(target);
          showNote(false);
          const page = focus ? match.focus.page : match.page;
          return { status: "fuzzy", score: round(match.score), blockIndex: null, paraId: null, text: (match.text || "").slice(0, 200),
                   page, pages: parts.map((part) => part.page) };
        }
      }
    } catch (error) {
      // Treated as not found below; the note says so.
    }
    showNote(true);
    return { status: "not_found", score: 0, blockIndex: null, paraId: null, text: "" };
  }

  function round(value) {
    return Math.round(value * 1000) / 1000;
  }

  async function locate(locator) {
    if (!locator || typeof locator !== "object") return { status: "not_found", score: 0, blockIndex: null, paraId: null, text: "" };
    showContext(locator);
    if (kind === "pdf") return pdfLocate(locator);
    return textLocate(locator);
  }

  // --- the context panel: the cited chunk with its neighbours ---------------
  const panel = document.getElementById("context-panel");
  // The words marked in the document, marked in the cited chunk of the panel too.
  let contextQuote = "";
  const chunkTexts = new WeakMap();
  const squash = (value) => value.replace(/\s+/g, " ").trim();

  function markContext(quote) {
    contextQuote = quote || "";
    const item = panel && panel.querySelector(".context-item.target");
    const full = item && chunkTexts.get(item);
    if (!full) return;
    const textEl = item.lastElementChild;
    const chunk = squash(full);
    const wanted = squash(contextQuote);
    // The marked words' first and last words in the chunk: LightRAG's text
    // may differ a little inside (its own list numbers), and a quote may
    // start with the preview's list label, which LightRAG writes otherwise.
    let at = -1;
    for (let skip = 0; skip <= 4 && at < 0 && wanted.length >= skip + 8; skip++) {
      at = chunk.indexOf(wanted.slice(skip, skip + 12));
    }
    const tail = wanted.slice(-12);
    const last = at < 0 ? -1 : chunk.indexOf(tail, at);
    const end = last < 0 ? Math.min(chunk.length, at + wanted.length) : last + tail.length;
    if (at < 0) {
      textEl.textContent = chunk.length > 280 ? `${chunk.slice(0, 280)}…` : chunk;
      return;
    }
    const from = Math.max(0, at - 60);
    const to = Math.min(chunk.length, Math.max(end, from + 280));
    const mark = document.createElement("mark");
    mark.className = "mnote-context-hit";
    mark.textContent = chunk.slice(at, Math.min(end, to));
    textEl.replaceChildren((from > 0 ? "…" : "") + chunk.slice(from, at), mark, chunk.slice(at + mark.textContent.length, to) + (to < chunk.length ? "…" : ""));
  }

  async function showContext(locator) {
    contextQuote = "";
    if (!panel || typeof locator.chunkIndex !== "number") {
      if (panel) panel.hidden = true;
      return;
    }
    const url = new URL(panel.dataset.url, origin);
    url.searchParams.set("chunk_index", locator.chunkIndex);
    url.searchParams.set("context", "2");
    if (locator.blockId) url.searchParams.set("block_id", locator.blockId);
    let data = null;
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      data = response.ok ? await response.json() : null;
    } catch (error) {
      data = null;
    }
    const list = panel.querySelector(".context-list");
    list.replaceChildren();
    if (!data || !data.chunks || data.chunks.length < 2) {
      panel.hidden = true;
      return;
    }
    for (const chunk of data.chunks) {
      const item = document.createElement("li");
      item.className = chunk.isTarget ? "context-item target" : "context-item";
      item.dataset.chunkIndex = chunk.chunkIndex;
      const heading = document.createElement("span");
      heading.className = "context-heading";
      heading.textContent = (chunk.headingPath || []).slice(-1)[0] || "";
      const text = document.createElement("span");
      text.textContent = chunk.text.length > 280 ? `${chunk.text.slice(0, 280)}…` : chunk.text;
      item.append(heading, text);
      chunkTexts.set(item, chunk.text);
      // A neighbour re-targets the preview on its own text.
      item.addEventListener("click", () => {
        list.querySelectorAll(".target").forEach((el) => el.classList.remove("target"));
        item.classList.add("target");
        const neighbour = { evidenceText: chunk.text.slice(0, 600), headingPath: chunk.headingPath || [], searchQuery: "", page: chunk.page };
        if (kind === "pdf") pdfLocate(neighbour);
        else textLocate(neighbour);
      });
      list.append(item);
    }
    panel.hidden = false;
    if (contextQuote) markContext(contextQuote);
  }

  function tell(message) {
    if (window.parent !== window) window.parent.postMessage(message, origin);
  }

  window.addEventListener("message", async (event) => {
    // Only our own pages may steer the preview.
    if (event.origin !== origin || event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.type !== "mnote:locate") return;
    let result;
    try {
      result = await locate(message.locator);
    } catch (error) {
      // The parent always gets an answer; a passage we failed on is not found.
      clearHighlight();
      showNote(true);
      result = { status: "not_found", score: 0, blockIndex: null, paraId: null, text: "", error: String(error).slice(0, 200) };
    }
    tell({ type: "mnote:located", requestId: message.requestId ?? null, ...result });
  });

  // Exposed for the standalone page and for tests; same code path as messages.
  window.mnoteLocate = locate;

  const initial = document.getElementById("initial-locator");
  const start = async () => {
    tell({ type: "mnote:ready", sourceId });
    if (initial) {
      const locator = JSON.parse(initial.textContent);
      if (locator) {
        const result = await locate(locator);
        doc.dataset.initialStatus = result.status;
      }
    }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
