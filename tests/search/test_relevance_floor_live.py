"""The relevance floor through the real LightRAG: LightRAG reranks with the
embedded rerank, and the search reads the candidates' cosines from the model
endpoint by key afterwards."""

import pytest

from mnote.search.answers import full_library_search

pytestmark = [pytest.mark.django_db, pytest.mark.integration]


def test_words_nothing_in_the_library_mentions_find_nothing_that_matches_well(demo_library, member):
    nonsense = full_library_search(member, "zxqv blorft quantum pineapple")
    answered = full_library_search(member, "What pressure must the azimuth bearing oil stay between?")

    assert nonsense.diagnostics["lowConfidence"] is True
    assert answered.diagnostics["lowConfidence"] is False
    assert answered.citations[0].file_name == "gamma-telescope-manual.docx"
