"""The deterministic answering model used by tests: it answers LightRAG's own
RAG prompt (read from lightrag-hku 1.5.7's prompt.py) from its context."""

import json

from mnote.stack.answering_model import NO_ANSWER, answer, context_of, pieces

# LightRAG 1.5.7's naive_query_context, filled as render_chunks_context_text does.
CHUNKS = [
    {"reference_id": "1", "content": "# Gamma\nThe Gamma telescope has a 4.2 metre primary mirror made of Zerodur glass.\n\n"
     "## Maintenance\nThe mirror is re-aluminised every three years in the on-site coating chamber."},
    {"reference_id": "2", "content": "The Beta dome opens at dusk. 穹顶在黄昏时打开。"},
]
CONTEXT = (
    "\nDocument Chunks (Each entry has a reference_id refer to the `Reference Document List`; the optional "
    "`content_headings` field gives the chunk's heading path within its source document, e.g. "
    "`Section 1 → Subsection 1.2`):\n\n```json\n"
    + "\n".join(json.dumps(c, ensure_ascii=False) for c in CHUNKS)
    + "\n```\n\nReference Document List (Each entry starts with a [reference_id] that corresponds to entries in "
    "the Document Chunks):\n\n```\n[1] gamma.docx\n[2] beta.md\n```\n\n"
)
SYSTEM = "---Role---\n\nYou are an expert AI assistant...\n\n---Context---\n" + CONTEXT


def ask(*questions):
    messages = [{"role": "system", "content": SYSTEM}]
    for q in questions[:-1]:
        messages += [{"role": "user", "content": q}, {"role": "assistant", "content": "…"}]
    return answer(messages + [{"role": "user", "content": questions[-1]}])


def test_it_reads_the_chunks_and_references_of_lightrags_prompt():
    chunks, references = context_of(SYSTEM)
    assert [r for r, _ in chunks] == ["1", "2"] and references == {"1": "gamma.docx", "2": "beta.md"}


def test_it_answers_with_context_sentences_markers_and_a_reference_list():
    text = ask("How often is the Gamma mirror re-aluminised?")
    body, references = text.split("\n\n### References\n\n")
    assert body.startswith("The mirror is re-aluminised every three years in the on-site coating chamber [1].")
    assert "4.2 metre" in body  # decimals are not sentence ends
    assert references == "- [1] gamma.docx"


def test_it_reads_a_follow_up_in_the_light_of_the_earlier_question():
    assert ask("What glass?").startswith("The Gamma telescope has a 4.2 metre primary mirror made of Zerodur glass [1].")
    assert ask("How often is it done?") == NO_ANSWER
    followed = ask("Is the mirror re-aluminised?", "How often is it done?")
    assert followed.startswith("The mirror is re-aluminised every three years in the on-site coating chamber [1].")


def test_it_says_so_when_nothing_in_the_context_matches_and_streams_in_pieces():
    assert ask("Who painted the Mona Lisa?") == NO_ANSWER
    text = ask("What is the Beta dome?")
    assert "".join(pieces(text)) == text and len(pieces(text)) > 3


def test_it_answers_a_prompt_mnote_made_from_that_prompt_alone():
    """LightRAG's bypass mode sends MNote's prompt as the user's message, with no system prompt."""
    from types import SimpleNamespace

    from mnote.search.answers import answer_context

    citations = [SimpleNamespace(lightrag_file_path="gamma.docx", chunk_id="c-0", source_path="manuals/gamma.docx",
                                 citation_id="G1")]
    chunks = [{"file_path": "gamma.docx", "chunk_id": "c-0", "content": CHUNKS[0]["content"]},
              {"file_path": "beta.md", "chunk_id": "c-1", "content": CHUNKS[1]["content"]}]
    context = answer_context("How often is the Gamma mirror re-aluminised?", citations, chunks)
    assert "Beta dome" not in context.prompt and context.ids_by_reference == {"1": ["G1"]}
    text = answer([{"role": "user", "content": context.prompt}])
    assert text.startswith("The mirror is re-aluminised every three years in the on-site coating chamber [1].")
    assert "[1] manuals/gamma.docx" in text


def test_the_stand_in_extraction_gives_lightrag_a_graph_of_capitalised_names():
    from mnote.stack.chat_standin import EXTRACTION_DONE, graph_extraction

    rows = graph_extraction("# Vault\n\nThe Gamma vault combination is 4471-ZETA, changed in spring.").splitlines()
    assert rows[-1] == EXTRACTION_DONE
    assert rows[0].startswith("entity<|#|>Gamma<|#|>Other<|#|>The Gamma vault combination is 4471-ZETA")
    assert any(r.startswith("relation<|#|>Gamma<|#|>4471-ZETA<|#|>") for r in rows)
    assert json.loads(graph_extraction("Gamma and Zerodur are named here.", as_json=True))["relationships"]
