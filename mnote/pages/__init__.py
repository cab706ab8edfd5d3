"""The pages: every view, its forms and the templates it renders, one module
per area of the app (the JSON API and MCP sit beside it in ``mnote.api``).
Thin: each view validates its input with a form and calls the stages below
(answers, citations, library, the preview's renderers), which know nothing
of HTTP. ``urls.py`` lists every page's address."""
