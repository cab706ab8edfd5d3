from django.urls import path

from mnote.pages import groups as group_views

app_name = "groups"

urlpatterns = [
    path("add/", group_views.group_add, name="add"),
    path("<int:group_id>/", group_views.group_edit, name="edit"),
    path("<int:group_id>/delete/", group_views.group_delete, name="delete"),
]
