from django.urls import path

from mnote.search import views

urlpatterns = [
    path("search/", views.search, name="search"),
    path("ask/", views.ask, name="ask"),
]
