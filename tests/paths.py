"""Where the tests find the checkout and their recorded files, whichever
folder under tests/ a test module sits in."""

from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
FIXTURES = REPO_DIR / "tests" / "fixtures"
# Sidecars and chunk stores as LightRAG 1.5.7 wrote them, for the citation mapper.
MAPPER_FIXTURES = FIXTURES / "mapper"
DEMO_LIBRARY = REPO_DIR / "mnote" / "demo" / "library"
# Screenshots and traces the browser tests leave for a person to look at.
ARTIFACTS = REPO_DIR / "artifacts"
