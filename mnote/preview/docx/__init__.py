"""Internals of the DOCX renderer; the public API is ``mnote.preview.docx_render``."""
