from django.urls import path

from mnote.pages import preview as views

urlpatterns = [
    path("<int:source_id>/", views.document, name="preview"),
    path("<int:source_id>/original", views.original, name="preview-original"),
    path("<int:source_id>/image/<path:part>", views.asset, name="preview-asset"),
    path("<int:source_id>/page/<int:page>.png", views.pdf_page, name="preview-pdf-page"),
    path("<int:source_id>/find", views.pdf_find, name="preview-pdf-find"),
    path("<int:source_id>/anchor", views.anchor, name="preview-anchor"),
]
