// The preview's locator: lands on the cited passage and tells the parent page
// what it found. Protocol (same origin only):
//   parent → preview  {type: "mnote:locate", requestId, locator}
//   preview → parent  {type: "mnote:ready", sourceId}
//   preview → parent  {type: "mnote:located", requestId, status, score, blockIndex, paraId, text}
(function () {
  "use strict";

  const doc = document.getElementById("document");
  if (!doc) return;
  const sourceId = Number(doc.dataset.sourceId);
  const kind = doc.dataset.kind;
  const note = document.getElementById("locate-note");
  const origin = window.location.origin;

  // Below this a passage is "not found": no highlight is better than a wrong one.
  const FOUND = 0.45;
  const EXACT = 0.85;
  const MAX_SPAN = 4;

  const STOPWORDS = new Set(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with which".split(" ")
  );
  const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/;

  function normalise(text) {
    return (text || "").normalize("NFKC").toLowerCase();
  }

  // Latin words, and CJK as character bigrams (CJK text has no spaces).
  // Regex splitting, not a loop per character: a 10,000-paragraph document
  // is tokenised in one pass when it is first located in.
  const WORD = /[\p{L}\p{N}]+/gu;
  const CJK_OR_NOT = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+|[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+/g;
  function tokens(text) {
    const out = [];
    for (const word of normalise(text).match(WORD) || []) {
      for (const part of word.match(CJK_OR_NOT)) {
        if (CJK.test(part[0])) {
          if (part.length === 1) out.push(part);
          for (let i = 0; i + 1 < part.length; i++) out.push(part.slice(i, i + 2));
        } else if (part.length >= 2 && !STOPWORDS.has(part)) {
          out.push(part);
        }
      }
    }
    return out;
  }

  // --- the blocks of this document, tokenised once -------------------------
  // A footnote number is not part of the sentence it follows ("mirror1").
  function blockText(element) {
    if (!element.querySelector(".docx-noteref")) return element.textContent || "";
    const copy = element.cloneNode(true);
    copy.querySelectorAll(".docx-noteref").forEach((ref) => ref.remove());
    return copy.textContent || "";
  }

  // Blocks with their tokens and the heading they sit under, and the
  // document frequency of each token among them (for rarity weights).
  function describe(elements) {
    let heading = "";
    const described = elements.map((element) => {
      const text = blockText(element);
      if (element.dataset.headingLevel) heading = normalise(text).trim();
      return { element, text, heading, set: new Set(tokens(text)) };
    });
    const df = new Map();
    for (const block of described) for (const t of block.set) df.set(t, (df.get(t) || 0) + 1);
    described.df = df;
    return described;
  }

  let blocks = null;
  function indexBlocks() {
    if (!blocks) blocks = describe(Array.from(doc.querySelectorAll("[data-block-index]")));
    return blocks;
  }

  function weightOf(token, df, total) {
    const rarity = Math.log(1 + total / (1 + (df.get(token) || 0)));
    // Long rare terms say most about where a passage is.
    const long = token.length >= 6 || (CJK.test(token) && token.length >= 2) ? 1.3 : 1;
    return rarity * long;
  }

  // Score runs of consecutive blocks [start, end) against the evidence text.
  function bestSpan(candidates, locator) {
    const evidence = Array.from(new Set(tokens(locator.evidenceText || locator.displayQuote || "")));
    if (!evidence.length || !candidates.length) return null;
    const weights = new Map(evidence.map((t) => [t, weightOf(t, candidates.df, candidates.length)]));
    const total = evidence.reduce((sum, t) => sum + weights.get(t), 0);
    const query = Array.from(new Set(tokens(locator.searchQuery || "")));
    const headingPath = locator.headingPath || [];
    const heading = headingPath.length ? normalise(headingPath[headingPath.length - 1]).trim() : "";

    let best = null;
    for (let i = 0; i < candidates.length; i++) {
      const covered = new Set();
      for (let span = 1; span <= MAX_SPAN && i + span <= candidates.length; span++) {
        const block = candidates[i + span - 1];
        for (const t of evidence) if (block.set.has(t)) covered.add(t);
        let coverage = 0;
        for (const t of covered) coverage += weights.get(t);
        coverage /= total;
        let score = coverage - 0.03 * (span - 1);
        if (heading && candidates[i].heading && (candidates[i].heading.includes(heading) || heading.includes(candidates[i].heading))) {
          score += 0.08;
        }
        // The bare query counts only inside a window that already matches.
        const spanBlocks = candidates.slice(i, i + span);
        if (coverage >= 0.3 && query.length && query.every((t) => spanBlocks.some((b) => b.set.has(t)))) {
          score += 0.04;
        }
        if (!best || score > best.score + 1e-9) best = { start: i, span, score: Math.min(score, 1), coverage };
        if (coverage >= 0.98) break;
      }
    }
    if (!best) return null;
    best.blocks = candidates.slice(best.start, best.start + best.span);
    return best;
  }

  // The blocks from one paragraph id to another, tokenised on their own: the
  // fast path need not index the whole document.
  function paraIdRange(paraIds) {
    if (!paraIds || !paraIds[0]) return null;
    const elements = Array.from(doc.querySelectorAll("[data-block-index]"));
    const first = elements.findIndex((e) => e.dataset.paraId === paraIds[0]);
    if (first < 0) return null;
    let last = elements.findIndex((e, i) => i >= first && e.dataset.paraId === paraIds[1]);
    if (last < 0) last = first;
    return describe(elements.slice(first, last + 1));
  }

  // --- highlighting -----------------------------------------------------------
  let shown = [];
  function clearHighlight() {
    for (const element of shown) element.classList.remove("mnote-hit", "mnote-hit-outline");
    shown = [];
    doc.querySelectorAll(".mnote-rect").forEach((rect) => rect.remove());
  }

  function highlight(elements) {
    clearHighlight();
    shown = elements;
    for (const element of elements) {
      element.classList.remove("mnote-hit-outline");
      // Restart the fade each time, even on the same block.
      void element.offsetWidth;
      element.classList.add("mnote-hit");
    }
    scrollToCenter(elements[0]);
    window.setTimeout(() => {
      for (const element of elements) {
        if (shown.includes(element)) element.classList.add("mnote-hit-outline");
      }
    }, 1600);
  }

  // Scroll this frame only: scrollIntoView would scroll the parent page too.
  function scrollToCenter(element) {
    const rect = element.getBoundingClientRect();
    // Centre in what the context panel leaves visible.
    const contextPanel = document.getElementById("context-panel");
    const visible = window.innerHeight - (contextPanel && !contextPanel.hidden ? contextPanel.offsetHeight : 0);
    const offset = Math.max((visible - Math.min(rect.height, visible)) / 2, 0);
    window.scrollTo({ top: window.scrollY + rect.top - offset, behavior: "smooth" });
  }

  function showNote(visible) {
    if (note) note.hidden = !visible;
  }

  function textLocate(locator) {
    let found = null;
    let status = "fuzzy";
    const range = paraIdRange(locator.paraIds);
    if (range) {
      // Fast path: the DOCX's own paragraph ids, verified against the evidence.
      found = bestSpan(range, locator);
      if (found && found.score >= FOUND) status = "exact";
      else found = null;
    }
    if (!found) {
      found = bestSpan(indexBlocks(), locator);
      if (found && found.score >= EXACT) status = "exact";
    }
    if (!found || found.score < FOUND) {
      clearHighlight();
      showNote(true);
      return { status: "not_found", score: found ? round(found.score) : 0, blockIndex: null, paraId: null, text: "" };
    }
    const elements = found.blocks.map((b) => b.element);
    highlight(elements);
    showNote(false);
    const text = elements.map((e) => e.textContent.trim()).join(" ").slice(0, 200);
    return {
      status,
      score: round(found.score),
      blockIndex: Number(elements[0].dataset.blockIndex),
      paraId: elements[0].dataset.paraId || null,
      text,
    };
  }

  function drawRects(page, rects) {
    const holder = doc.querySelector(`.pdf-page[data-page="${page}"]`);
    if (!holder) return null;
    for (const [x0, y0, x1, y1] of rects) {
      const rect = document.createElement("div");
      rect.className = "mnote-rect mnote-hit";
      rect.style.left = `${x0 * 100}%`;
      rect.style.top = `${y0 * 100}%`;
      rect.style.width = `${(x1 - x0) * 100}%`;
      rect.style.height = `${(y1 - y0) * 100}%`;
      holder.appendChild(rect);
    }
    return holder;
  }

  async function pdfLocate(locator) {
    clearHighlight();
    if (locator.precision === "bbox" && locator.page && locator.bbox) {
      const holder = drawRects(locator.page, [locator.bbox]);
      if (holder) {
        scrollToCenter(holder.querySelector(".mnote-rect"));
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
        const holder = drawRects(match.page, match.rects);
        if (holder) {
          scrollToCenter(holder.querySelector(".mnote-rect") || holder);
          showNote(false);
          return { status: "fuzzy", score: round(match.score), blockIndex: null, paraId: null, text: (match.text || "").slice(0, 200) };
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
  async function showContext(locator) {
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
  }

  function tell(message) {
    if (window.parent !== window) window.parent.postMessage(message, origin);
  }

  window.addEventListener("message", async (event) => {
    // Only our own pages may steer the preview.
    if (event.origin !== origin || event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.type !== "mnote:locate") return;
    const result = await locate(message.locator);
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
