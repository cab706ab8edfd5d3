from django.urls import path

from mnote.pages import search as views

urlpatterns = [
    path("search/", views.search, name="search"),
    path("ask/", views.ask, name="ask"),
    path("ask/c/<int:pk>/", views.conversation, name="conversation"),
    path("ask/c/<int:pk>/delete", views.conversation_delete, name="conversation-delete"),
]
